"""Code the run never reaches: defs and classes nothing in the project names.

A repository keeps old training paths beside the one its launch runs: a second ``_train`` loop
nothing calls any more, a ``train_fs`` method left over from an experiment, a trainer class no
script, configuration or registry names. Their loops never run, so what they would log or
accumulate is no event of any run. :class:`Reach` finds them once per project: a top-level def or
class is reached when its name is used by code that runs (module-level code of any file, or the
body of a def already reached), and a method when its class is reached and its name is so used.

Only a file the run is seen to use loses defs so: a file none of whose defs the project names (a
script whose ``main`` an outside launcher calls, a snippet, a library's public module) counts as
run by code not shown, with everything it uses, and any method of its classes and of the project
classes they inherit may be called. A method is left unreached only in a class whose other
methods the run calls by name (``runner.train()`` beside an old ``runner._train`` nothing calls).

It errs towards "reached": any spelling counts (``x.name``, ``name``, an import, a keyword, a
string's words, a part of an f-string or concatenation that builds names, ``getattr(self,
f"_{mode}_step")``), and so does the text of the project's other files (YAML, JSON, shell
scripts, notebooks, READMEs, setup files). A decorated def (a registry, a CLI command), a dunder,
a ``test_`` function, a method of a class with an outside base (a framework calls ``forward``,
``training_step``, ``on_*`` hooks by name), every def of a file that looks names up at run time
(``globals()``, ``eval``, ``fire.Fire()``) or of a module picked by a run-time name
(``getattr(models, name)``), and every class of a project that registers subclasses
(``__init_subclass__``, ``__subclasses__``, a metaclass) count as reached.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from ddp_doctor.lint.context import FileContext, dotted, is_main_guard
from ddp_doctor.lint.discover import iter_files
from ddp_doctor.lint.project_modules import parse_file
from ddp_doctor.lint.source import read_text

# The project's other text (configurations, launch scripts, notebooks, docs), read for the names
# it spells; past the caps nothing is called unreached (a name could hide in what was not read).
TEXT_SUFFIXES = (
    ".yaml",
    ".yml",
    ".json",
    ".jsonnet",
    ".toml",
    ".cfg",
    ".ini",
    ".conf",
    ".gin",
    ".sh",
    ".bash",
    ".zsh",
    ".slurm",
    ".sbatch",
    ".pbs",
    ".job",
    ".txt",
    ".md",
    ".rst",
    ".ipynb",
)
MAX_TEXT_FILES = 4000
MAX_TEXT_BYTES = 2_000_000  # a larger file is data, not configuration (its words are not read)

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# ``"%s_epoch" % mode``, ``"{}_step".format(x)``: a placeholder splits a string into name parts
PLACEHOLDER = re.compile(r"%[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]|\{[^{}]*\}")
MIN_FRAGMENT = 3

# Decorators that register nothing: the def is still reached only through its name.
PLAIN_DECORATORS = frozenset(
    {
        "staticmethod",
        "classmethod",
        "property",
        "setter",
        "getter",
        "deleter",
        "cached_property",
        "abstractmethod",
        "abstractproperty",
        "no_grad",
        "inference_mode",
        "enable_grad",
        "lru_cache",
        "cache",
        "wraps",
        "overload",
        "override",
        "final",
        "dataclass",
        "contextmanager",
        "total_ordering",
    }
)
# Bases that call no method by name (an abstract base, a typing helper): a class with only these,
# or project classes, as bases has its methods run only where the project names them.
PLAIN_BASES = frozenset({"object", "ABC", "Generic", "Protocol", "NamedTuple", "Enum", "IntEnum"})
# Calls that reach a file's defs by a name known only at run time.
BUILTIN_LOOKUPS = frozenset({"globals", "locals", "eval", "exec"})
COMMAND_LINES = frozenset({"Fire", "CLI"})  # with no target: every def of the file is a command
# Calls that look an attribute up by a name known at run time: the parts of names the file builds
# from strings (``f"train_{mode}"``) count as spelling every def whose name starts or ends so.
LOOKUPS = frozenset({"getattr", "hasattr"})
# A file without these words looks no name up at run time (the cheap check before parsing one).
LOOKUP_WORDS = (
    "getattr",
    "hasattr",
    "__dict__",
    "globals",
    "locals",
    "vars",
    "eval",
    "exec",
    "Fire",
    "CLI",
    "import_module",
    "__import__",
    "sys.modules",
    "locate",
    "instantiate",
    "get_class",
    "get_method",
)
# Calls that load a module named at run time: any top-level def of the project may be what is
# then looked up in it (``getattr(importlib.import_module(path), cls_name)``).
IMPORT_CALLS = frozenset({"import_module", "__import__", "locate", "get_class", "get_method", "instantiate"})
# Spellings that make any class of the project reachable by its place in a hierarchy.
SUBCLASS_HOOKS = frozenset({"__init_subclass__", "__subclasses__"})


@dataclass
class Unit:
    """A top-level def or class of a file, or a method of a top-level class."""

    name: str
    owner: str | None  # the class of a method
    start: int
    end: int
    uses: set[str]
    pinned: bool  # reached whatever names it (a registry's decorator, a dunder, a test)
    is_class: bool = False
    calls: set[str] = field(default_factory=set)  # the last names of what it calls
    bases: tuple[str, ...] = ()  # a class's bases, by last name


@dataclass
class FileRefs:
    units: list[Unit] = field(default_factory=list)
    uses: set[str] = field(default_factory=set)  # module-level code: always runs
    calls: set[str] = field(default_factory=set)  # ... and the last names of what it calls
    entry: bool = False  # ``if __name__ == "__main__":``: a script run by itself
    all_reached: bool = False  # names looked up at run time: every def of the file is reached
    imports_by_name: bool = False  # a module or def named at run time: every top-level def is reached
    fragments: set[str] = field(default_factory=set)  # parts of names built at run time (below)
    looks_up: bool = False  # ``getattr(obj, name)`` with a name built at run time: fragments count
    picked_modules: set[str] = field(default_factory=set)  # ``getattr(models, name)``: any def of it


def _string_words(text: str, names: set[str], fragments: set[str], partial: bool) -> None:
    """The words of a string; those that may be a part of a name built at run time are also
    fragments: a word touching a placeholder (``"%s_epoch"``, ``"{}_step"``) or, in a part of an
    f-string or a concatenation (``partial``), the part's edge (``f"_{mode}_step"``,
    ``"train_" + phase``)."""
    pieces = PLACEHOLDER.split(text)
    for i, piece in enumerate(pieces):
        words = WORD.findall(piece)
        names.update(words)
        if not words:
            continue
        if (i > 0 or partial) and len(words[0]) >= MIN_FRAGMENT and piece.startswith(words[0]):
            fragments.add(words[0])
        if (i < len(pieces) - 1 or partial) and len(words[-1]) >= MIN_FRAGMENT and piece.endswith(words[-1]):
            fragments.add(words[-1])


def _names(nodes: list[ast.AST], fragments: set[str], calls: set[str]) -> set[str]:
    """Every spelling the subtrees of ``nodes`` use (names, attributes, imports, keywords, string
    words); the string words that may build names go to ``fragments``, the last names of what
    they call (``Runner(cfg)``, ``models.Runner(cfg)``) to ``calls``."""
    out: set[str] = set()
    partial: set[int] = set()  # string constants that are a part of a name built at run time
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Call) and (callee := dotted(node.func)):
                calls.add(callee.rsplit(".", 1)[-1])
            if isinstance(node, ast.Name):
                out.add(node.id)
            elif isinstance(node, ast.Attribute):
                out.add(node.attr)
            elif isinstance(node, ast.alias):
                out.update(node.name.split("."))
                if node.asname:
                    out.add(node.asname)
            elif isinstance(node, ast.ImportFrom) and node.module:
                out.update(node.module.split("."))
            elif isinstance(node, ast.keyword) and node.arg:
                out.add(node.arg)
            elif isinstance(node, ast.JoinedStr):
                partial.update(id(v) for v in node.values)
            elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
                partial.update((id(node.left), id(node.right)))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                _string_words(node.value, out, fragments, id(node) in partial)
    return out


def _decorated(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
    """A decorator that may register the def (``@REGISTRY.register()``, ``@app.command``)."""
    for d in node.decorator_list:
        text = dotted(d.func if isinstance(d, ast.Call) else d) or ""
        if text.rsplit(".", 1)[-1] not in PLAIN_DECORATORS:
            return True
    return False


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _pinned(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
    name = node.name
    # pytest collects ``test_*`` functions and ``Test*`` classes by their names
    return _dunder(name) or name.startswith(("test_", "Test")) or _decorated(node)


def _span(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> tuple[int, int]:
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return start, node.end_lineno or node.lineno


def _def_unit(node: ast.FunctionDef | ast.AsyncFunctionDef, owner: str | None, fragments: set[str]) -> Unit:
    start, end = _span(node)
    calls: set[str] = set()
    return Unit(node.name, owner, start, end, _names([node], fragments, calls), _pinned(node), calls=calls)


def _class_units(node: ast.ClassDef, fragments: set[str]) -> list[Unit]:
    methods = [b for b in node.body if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))]
    own = [*node.bases, *node.keywords, *node.decorator_list, *(b for b in node.body if b not in methods)]
    bases = tuple(
        (dotted(b.value if isinstance(b, ast.Subscript) else b) or "?").rsplit(".", 1)[-1] for b in node.bases
    )
    start, end = _span(node)
    # a metaclass other than ABCMeta may register the class (a plugin table)
    registers = any(
        k.arg == "metaclass" and (dotted(k.value) or "").rsplit(".", 1)[-1] != "ABCMeta"
        for k in node.keywords
    )
    calls: set[str] = set()
    uses = _names(own, fragments, calls)
    cls = Unit(node.name, None, start, end, uses, _pinned(node) or registers, True, calls, bases)
    return [cls, *(_def_unit(m, node.name, fragments) for m in methods)]


def _import_bindings(ctx: FileContext) -> dict[str, str]:
    """Names the file's imports bind, anywhere in it -> what they import, as far as written
    (``from . import tasks`` -> ``tasks``, ``import models.resnet as M`` -> ``models.resnet``)."""
    out: dict[str, str] = {}
    for node in ctx.of_type(ast.Import):
        for a in node.names:
            out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
    for imp in ctx.of_type(ast.ImportFrom):
        for a in imp.names:
            out[a.asname or a.name] = ".".join(p for p in (imp.module, a.name) if p)
    return out


def _looks_up_own_names(call: ast.Call, head: str) -> bool:
    """``globals()``, ``eval(...)``, ``vars()`` (the builtins, not ``model.eval()``), or
    ``fire.Fire()`` with no target."""
    if isinstance(call.func, ast.Name) and (head in BUILTIN_LOOKUPS or (head == "vars" and not call.args)):
        return True
    return head in COMMAND_LINES and not call.args


def _dynamic(ctx: FileContext, refs: FileRefs) -> None:
    """Names this file looks up at run time: its own defs (``globals()[name]``, ``fire.Fire()``
    with no target) or those of a module it imports (``getattr(models, args.arch)``,
    ``models.__dict__[name]``)."""
    imported = _import_bindings(ctx)
    for node in ctx.of_type(ast.Call):
        head = (dotted(node.func) or "").rsplit(".", 1)[-1]
        if _looks_up_own_names(node, head):
            refs.all_reached = True
        elif head in IMPORT_CALLS and node.args and not isinstance(node.args[0], ast.Constant):
            refs.imports_by_name = True
        elif head in LOOKUPS and len(node.args) >= 2 and not isinstance(node.args[1], ast.Constant):
            refs.looks_up = True
            target = dotted(node.args[0])
            if target is not None and target in imported:
                refs.picked_modules.add(imported[target])
    for sub in ctx.of_type(ast.Subscript):
        if dotted(sub.value) == "sys.modules":
            refs.imports_by_name = True
        if isinstance(sub.value, ast.Attribute) and sub.value.attr == "__dict__":
            refs.looks_up = True
            target = dotted(sub.value.value)
            if target is not None and target in imported:
                refs.picked_modules.add(imported[target])


def file_references(ctx: FileContext) -> FileRefs:
    """The defs of one file and what its module-level code and each def use."""
    refs = FileRefs()
    fragments = refs.fragments
    top: list[ast.AST] = []
    for node in ctx.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            refs.units.append(_def_unit(node, None, fragments))
        elif isinstance(node, ast.ClassDef):
            refs.units.extend(_class_units(node, fragments))
        else:  # defs under ``if``/``try`` at module level count as module-level code: always reached
            top.append(node)
            refs.entry = refs.entry or (isinstance(node, ast.If) and is_main_guard(node.test))
    refs.uses = _names(top, fragments, refs.calls)
    _dynamic(ctx, refs)
    return refs


def _related(module: str, picked: str) -> bool:
    """``picked`` (an imported module, package or def) and ``module`` name one another's parts
    (``models`` and ``src.models.resnet``)."""
    a, b = f".{module}.", f".{picked}."
    return a in b or b in a


def _ancestors(names: set[str], bases: dict[str, set[str]]) -> set[str]:
    """``names`` and the project classes they inherit from, by name."""
    out: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in out or name not in bases:
            continue
        out.add(name)
        todo.extend(bases[name])
    return out


@dataclass
class Reach:
    """Which defs of the project nothing reaches (see the module docstring): built once per index."""

    files: dict[str, FileRefs] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)  # spelled outside any def: reached from the start
    fragments: set[str] = field(default_factory=set)  # of the files that look names up at run time
    unknown: bool = False  # some text was left unread: nothing is called unreached
    _dead: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def add(self, module: str, ctx: FileContext) -> None:
        refs = self.files[module] = file_references(ctx)
        if refs.looks_up or refs.all_reached:
            self.fragments |= refs.fragments

    def add_text(self, text: str) -> None:
        _string_words(text, self.names, set(), False)

    def add_path(self, path: Path, module: str | None = None) -> None:
        """A project file the index does not read (no fact word, too large, a notebook): its words;
        a module of it that looks names up at run time (a builder's ``getattr(tasks, name)``) is
        read as code, for what its lookups may pick."""
        text = read_text(path, MAX_TEXT_BYTES)
        if text is None:
            self.unknown = True
            return
        if module is not None and any(w in text for w in LOOKUP_WORDS):
            ctx = parse_file(path)
            if ctx is not None:
                self.add(module, ctx)
                return
        self.add_text(text)

    def read_text_files(self, root: Path) -> None:
        files = list(itertools.islice(iter_files(root, [], TEXT_SUFFIXES), MAX_TEXT_FILES + 1))
        if len(files) > MAX_TEXT_FILES:
            self.unknown = True
            return
        for path in files:
            text = read_text(path, MAX_TEXT_BYTES)
            if text is not None:  # a file past the size cap is data
                self.add_text(text)

    def settle(self) -> None:
        """Spread "reached" from module-level code and the project's text through the defs' uses."""
        if self.unknown:
            return
        units = [(module, u) for module, refs in self.files.items() for u in refs.units]
        live_names = set(self.names)
        for refs in self.files.values():
            live_names |= refs.uses
        if any(n in live_names for n in SUBCLASS_HOOKS) or any(
            u.name in SUBCLASS_HOOKS for _, u in units
        ):  # classes found by their place in a hierarchy: no class is unreached
            return
        outside = self._outside_classes(units)
        picked = {m for refs in self.files.values() for m in refs.picked_modules}
        any_module = any(refs.imports_by_name for refs in self.files.values())
        whole = {
            module
            for module, refs in self.files.items()
            if any_module
            or refs.all_reached
            or module.rsplit(".", 1)[-1] == "hubconf"  # torch.hub calls its entry points by name
            or any(_related(module, p) for p in picked)
        }
        live = [False] * len(units)
        by_name: dict[str, list[int]] = {}
        methods: dict[tuple[str, str], list[int]] = {}
        for i, (module, u) in enumerate(units):
            by_name.setdefault(u.name, []).append(i)
            if u.owner is not None:
                methods.setdefault((module, u.owner), []).append(i)
        class_live: set[tuple[str, str]] = set()
        open_classes: set[str] = set()  # built by code the project does not show: any method may run
        queue: deque[int] = deque()

        def named(u: Unit) -> bool:
            return u.name in live_names or any(
                u.name.startswith(f) or u.name.endswith(f) for f in self.fragments
            )

        def reachable(i: int) -> bool:
            module, u = units[i]
            if u.owner is None:
                return u.pinned or module in whole or named(u)
            return (module, u.owner) in class_live and (
                u.pinned or u.owner in outside or u.owner in open_classes or named(u)
            )

        def consider(i: int) -> None:
            if not live[i] and reachable(i):
                live[i] = True
                queue.append(i)

        def spread() -> None:
            while queue:
                module, u = units[queue.popleft()]
                if u.is_class:
                    class_live.add((module, u.name))
                    for j in methods.get((module, u.name), ()):
                        consider(j)
                for n in u.uses - live_names:
                    live_names.add(n)
                    for j in by_name.get(n, ()):
                        consider(j)

        for i in range(len(units)):
            consider(i)
        spread()
        # A file none of whose defs the project names (a script whose ``main`` only an outside
        # launcher calls, a snippet, a library's public module) may be run some way the project does
        # not show: all its defs count as reached, with what they use; only the defs of a file the
        # run is seen to use are left unreached.
        used: set[str] = set()
        while True:
            # a file is seen used when the run reaches one of its defs and imports or names the
            # module, or runs it as a script (a name shared with a def of another file is no use)
            used = {
                m
                for i, (m, u) in enumerate(units)
                if live[i]
                and not u.pinned
                and m not in whole
                and (self.files[m].entry or m.rsplit(".", 1)[-1] in live_names)
            }
            orphans = [i for i, (m, u) in enumerate(units) if m not in used and not live[i]]
            if not orphans:
                break
            for i in orphans:
                live[i] = True
                queue.append(i)
            # a class of such a file, and the project classes it inherits from, may have any method
            # called by that unseen code (a base's ``train_loop`` an outside entry runs)
            opened = _ancestors({u.name for i in orphans if (u := units[i][1]).is_class}, self._bases(units))
            open_classes |= opened
            for j, (_, u) in enumerate(units):
                if u.owner in opened and not live[j]:
                    live[j] = True
                    queue.append(j)
            spread()
        # the methods of a class the run builds (``runner = Runner(cfg)``) and is seen to call by
        # name (``runner.train()``) are reached only so: one never named is an old path left beside
        # them. A class the project never builds by name (a library's ``Trainer`` its README runs,
        # one picked from a table) or whose methods no one names keeps them all.
        called = {
            (m, u.owner)
            for i, (m, u) in enumerate(units)
            if live[i] and u.owner and named(u) and not _dunder(u.name)
        }
        built_names = {c for refs in self.files.values() for c in refs.calls}
        built_names.update(c for i, (_, u) in enumerate(units) if live[i] for c in u.calls)
        built = _ancestors(built_names, self._bases(units))
        for i, (module, u) in enumerate(units):
            if live[i]:
                continue
            if u.owner is None or (
                (module, u.owner) in class_live and (module, u.owner) in called and u.owner in built
            ):
                # a method of an unreached class lies inside the class's own span
                self._dead.setdefault(module, []).append((u.start, u.end))
        for spans in self._dead.values():
            spans.sort()

    @staticmethod
    def _bases(units: list[tuple[str, Unit]]) -> dict[str, set[str]]:
        """Project class name -> the last names of its bases (over every class so named)."""
        out: dict[str, set[str]] = {}
        for _, u in units:
            if u.is_class:
                out.setdefault(u.name, set()).update(u.bases)
        return out

    def _outside_classes(self, units: list[tuple[str, Unit]]) -> set[str]:
        """Names of project classes with some base outside the project (``nn.Module``,
        ``pl.LightningModule``, ``Callback``), directly or through project bases: a framework may
        call any of their methods by name."""
        bases: dict[str, list[tuple[str, ...]]] = {}
        for _, u in units:
            if u.is_class:
                bases.setdefault(u.name, []).append(u.bases)
        outside: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, choices in bases.items():
                if name in outside:
                    continue
                if any(
                    (b not in bases and b not in PLAIN_BASES) or b in outside
                    for each in choices
                    for b in each
                ):
                    outside.add(name)
                    changed = True
        return outside

    def unreached(self, module: str | None, line: int) -> bool:
        """``line`` of ``module`` lies in a def or class nothing in the project reaches."""
        spans = self._dead.get(module or "")
        if not spans:
            return False
        i = bisect.bisect_right(spans, (line, sys.maxsize)) - 1  # the spans never overlap
        return i >= 0 and spans[i][0] <= line <= spans[i][1]
