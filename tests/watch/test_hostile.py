"""The watcher on every damaged or hostile run directory of the hostile-input matrix's reader
classes (tests/hostile/reader.py, `--quick` subset): one refresh, a diagnosis and the live view —
notes and partial results, never a traceback; and what it reads equals `read_run`'s problems."""

from __future__ import annotations

import io
import shutil

from fixtures.synth_run import SynthSpec, write_run
from hostile.harness import Config
from hostile.reader import reader_classes
from rich.console import Console

from ddp_doctor.rundir.reader import RunDirError, read_run
from ddp_doctor.watch import view
from ddp_doctor.watch.actions import Actions
from ddp_doctor.watch.follow import Watcher

QUICK = True  # the full list (without --quick) passed too, once, by hand (44 s)


def test_every_quick_reader_class_is_watched_without_a_traceback(tmp_path):
    cfg = Config(quick=QUICK, work=tmp_path / "m", timeout=60, rss_mb=1500, as_mb=6144, jobs=1, seed=10)
    base = write_run(tmp_path / "base", SynthSpec(world_size=2, steps=12, every=5))
    done = 0
    for name, damage, _ in reader_classes(base, cfg):
        run = tmp_path / "runs" / name
        shutil.copytree(base, run, symlinks=True)
        try:
            damage(run)
        except FileNotFoundError:
            continue
        watcher = Watcher(run, Actions(run))
        watcher.refresh()
        Console(file=io.StringIO(), width=120).print(view.render(watcher))
        try:
            whole = read_run(run, use_cache=False)
        except RunDirError:
            assert watcher.run is None and watcher.tail.waiting, name
        else:
            assert watcher.run is not None, name
            assert sorted(watcher.run.problems) == sorted(whole.problems), name
        done += 1
    assert done >= 10, done
