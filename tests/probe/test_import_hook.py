"""The after-import finder (probe/afterimport.py): a module counts once it is fully imported.

Regression tests for issue 22: `datasets`/`transformers`/`evaluate` call
`importlib.util.find_spec("torch")` before importing torch (the probe never started), and
importing lightning before torch left `lightning.fabric.fabric` half-initialised when torch
finished (a probe_error in the capture installer).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

from ddp_doctor.probe.afterimport import AfterImport
from probe.helpers import SCRIPTS, base_env, kind, read_rank, run_probe


@pytest.fixture
def finder(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    errors: list[tuple[str, str]] = []
    made = AfterImport(lambda name, error: errors.append((name, str(error))))
    made.errors = errors  # type: ignore[attr-defined]
    names = []

    def write(name: str, source: str) -> str:
        (tmp_path / f"{name}.py").write_text(source)
        names.append(name)
        return name

    made.write = write  # type: ignore[attr-defined]
    yield made
    if made in sys.meta_path:
        sys.meta_path.remove(made)
    for name in names:
        sys.modules.pop(name, None)
    importlib.invalidate_caches()


def test_find_spec_is_not_an_import_and_the_callback_runs_once_after_execution(finder):
    name = finder.write("zoo_findspec_a", "VALUE = 7\n")
    seen = []
    finder.add(name, lambda: seen.append(sys.modules[name].VALUE))
    for _ in range(3):  # what `datasets` does, repeatedly, before anything imports the module
        assert importlib.util.find_spec(name) is not None
    assert seen == [] and finder in sys.meta_path and name not in sys.modules
    importlib.import_module(name)
    assert seen == [7]
    assert finder not in sys.meta_path  # nothing left to wait for
    importlib.reload(sys.modules[name])
    assert seen == [7]
    assert not hasattr(sys.modules[name].__loader__, "__dict__") or (
        "exec_module" not in vars(sys.modules[name].__loader__)  # the loader is left as it was
    )


def test_a_spec_found_early_and_executed_later_still_fires_once(finder):
    name = finder.write("zoo_findspec_b", "VALUE = 3\n")
    seen = []
    finder.add(name, lambda: seen.append(sys.modules[name].VALUE))
    early = importlib.util.find_spec(name)
    importlib.import_module(name)  # through a second, fresh spec
    module = importlib.util.module_from_spec(early)
    early.loader.exec_module(module)  # the early spec's wrapped loader runs too: no second call
    assert seen == [3]


def test_a_half_initialised_module_waits_until_its_top_level_code_is_done(finder):
    # zoo_outer imports zoo_inner halfway through its body (as lightning.fabric.fabric imports
    # torch), and zoo_inner registers a callback for zoo_outer (as the probe's capture does)
    holder = type(sys)("zoo_finder_under_test")
    holder.add, holder.seen = finder.add, []
    sys.modules[holder.__name__] = holder
    finder.write(
        "zoo_inner",
        "import sys\nh = sys.modules['zoo_finder_under_test']\n"
        "h.add('zoo_outer', lambda: h.seen.append(sys.modules['zoo_outer'].LATE))\n",
    )
    outer = finder.write("zoo_outer", "import zoo_inner\nLATE = 2\n")
    try:
        importlib.import_module(outer)
        assert holder.seen == []  # zoo_outer was half-initialised when the callback came
        finder.poll()  # at the next import, or the probe's next training event
        assert holder.seen == [2] and finder.errors == []
    finally:
        sys.modules.pop(holder.__name__, None)


def test_a_failing_callback_is_reported_and_the_import_succeeds(finder):
    name = finder.write("zoo_findspec_c", "VALUE = 1\n")
    finder.add(name, lambda: 1 / 0)
    assert importlib.import_module(name).VALUE == 1
    assert finder.errors and finder.errors[0][0] == name


def test_a_failed_import_keeps_waiting_for_the_next_attempt(finder):
    name = finder.write("zoo_findspec_d", "raise ImportError('not yet')\n")
    seen = []
    finder.add(name, lambda: seen.append(1))
    with pytest.raises(ImportError):
        importlib.import_module(name)
    finder.write(name, "VALUE = 1\n")
    importlib.invalidate_caches()
    sys.modules.pop(name, None)
    importlib.import_module(name)
    assert seen == [1]


def test_probe_starts_when_the_script_asks_find_spec_torch_before_importing_it(tmp_path):
    script = tmp_path / "findspec_first.py"
    script.write_text(
        "import importlib.util, runpy\n"
        "assert importlib.util.find_spec('torch') is not None  # what `datasets` does first\n"
        f"runpy.run_path({str(SCRIPTS / 'single_process.py')!r})\n"
    )
    out = tmp_path / "run"
    run_probe(out, [sys.executable, str(script)], env=base_env(PYTHONPATH=str(SCRIPTS)))
    records = read_rank(out, 0)
    assert kind(records, "step"), "the probe never started"
    assert not kind(records, "probe_error")
