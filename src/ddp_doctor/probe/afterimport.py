"""Run callbacks once a module is fully imported: the one meta-path finder of the probe.

Used twice: by the sitecustomize shim, which waits for `torch` before starting the probe, and by
`state.after_import`, which waits for optional libraries (FSDP, DeepSpeed, logging libraries).
Standard library only, and only modules Python has imported at start-up anyway (`typing` is for
the type checker), so the shim loads it in every process for ~nothing (by path: see the shim).

What "fully imported" means here, and the cases that broke the earlier finders (issue 22):

* A `find_spec(name)` is not an import. `datasets`, `transformers` and `evaluate` call
  `importlib.util.find_spec("torch")` to test availability before torch is imported; the spec they
  get is never executed. The finder therefore stays installed until the module has really been
  executed, answers every `find_spec` with a fresh spec, and fires the callbacks once, from the
  first `exec_module` that completes.
* A module can be in `sys.modules` and still be running its top-level code: importing `lightning`
  before torch imports torch from inside `lightning.fabric.fabric`, so when torch finishes that
  module is half-initialised. A callback for a module in that state waits until its
  `__spec__._initializing` flag clears, checked on every later import (this finder is asked about
  every module not yet imported) and whenever the probe calls `poll()`.

The loader of the found spec gets an instance attribute `exec_module` wrapping its own, removed
again once it ran; loaders that are classes or modules (built-in, frozen) are not touched: `poll()`
sees such a module once it is in `sys.modules` and initialised. Nothing here raises into the importing program: a failing callback
goes to `on_error`.
"""

from __future__ import annotations

import _thread
import contextlib
import sys
from types import ModuleType

# Not `from typing import TYPE_CHECKING`: the shim loads this module in every process, and typing
# is not imported at start-up (mypy treats any name TYPE_CHECKING as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Callback = Callable[[], None]


def initialising(module: Any) -> bool:
    """True while the module's top-level code runs (importlib clears the flag when it returns)."""
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


class AfterImport:
    """Meta-path finder that runs callbacks once named modules are fully imported."""

    def __init__(self, on_error: Callable[[str, BaseException], None]) -> None:
        self.on_error = on_error
        # not imported yet, being imported, or half-initialised in sys.modules
        self.waiting: dict[str, list[Callback]] = {}
        self._searching = _thread._local()

    # --- registering ---------------------------------------------------------------------------
    def add(self, name: str, callback: Callback) -> None:
        """Run `callback` now if `name` is fully imported, else once it is."""
        module = sys.modules.get(name)
        if module is not None and not initialising(module):
            self._run(name, [callback])
            return
        self.waiting.setdefault(name, []).append(callback)
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def poll(self) -> None:
        """Run the callbacks of every watched module that is now fully imported.

        Covers modules that were half-initialised when their callback was added, loaders that
        could not be wrapped, and modules executed behind the import system's back
        (`module_from_spec` + `exec_module`). One dict lookup per watched name.
        """
        for name in list(self.waiting):
            module = sys.modules.get(name)
            if module is None or initialising(module):
                continue
            callbacks = self.waiting.pop(name, None)
            if callbacks is not None:  # else another thread took them
                self._run(name, callbacks)
        self._uninstall_if_done()

    # --- the meta-path finder protocol -----------------------------------------------------------
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        self.poll()
        if fullname not in self.waiting or getattr(self._searching, "name", None) == fullname:
            return None
        spec = self._spec_from_other_finders(fullname, path, target)
        if spec is not None and spec.loader is not None:
            self._wrap(fullname, spec.loader)
        return spec

    def invalidate_caches(self) -> None:
        pass

    # --- internals -------------------------------------------------------------------------------
    def _spec_from_other_finders(self, fullname: str, path: Any, target: Any) -> Any:
        """What the import system would find without us: the finders after this one, in order."""
        finders = list(sys.meta_path)
        start = finders.index(self) + 1 if self in finders else 0
        self._searching.name = fullname
        try:
            for finder in finders[start:]:
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    return spec
            return None
        finally:
            self._searching.name = None

    def _wrap(self, fullname: str, loader: Any) -> None:
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None or isinstance(loader, (type, ModuleType)):
            return  # shared loader (built-in, frozen): poll() sees the module once it is imported

        def exec_then_callbacks(module: Any) -> None:
            try:
                exec_module(module)
            finally:
                with contextlib.suppress(AttributeError):  # it stays module.__loader__: as it was
                    del loader.exec_module
            callbacks = self.waiting.pop(fullname, None)  # None: a spec found earlier ran first
            if callbacks:
                self._run(fullname, callbacks)
            self._uninstall_if_done()

        with contextlib.suppress(AttributeError, TypeError):  # __slots__: poll() sees it later
            loader.exec_module = exec_then_callbacks

    def _run(self, name: str, callbacks: list[Callback]) -> None:
        for callback in callbacks:
            try:
                callback()
            except Exception as error:  # noqa: BLE001 - never break the program's import
                self.on_error(name, error)

    def _uninstall_if_done(self) -> None:
        if not self.waiting and self in sys.meta_path:
            with contextlib.suppress(ValueError):  # another thread removed it
                sys.meta_path.remove(self)
