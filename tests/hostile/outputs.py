"""Area `outputs`: every destination the tool writes, planted with symlinks, FIFOs, read-only dirs."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from .harness import Config, Outcome, Try, _open_to_nobody

# --- outputs: every destination the tool writes ------------------------------------------------------------------


def output_tries(base: Path, cfg: Config) -> list[Try]:
    root = cfg.work / "outputs"
    root.mkdir(parents=True, exist_ok=True)
    victim_dir = root / "victims"
    victim_dir.mkdir()
    tries: list[Try] = []
    counter = [0]

    def victim() -> Path:
        counter[0] += 1
        v = victim_dir / f"victim-{counter[0]}.txt"
        v.write_bytes(b"precious data %d\n" % counter[0])
        return v

    def dest(kind: str) -> tuple[Path, dict[Path, bytes], frozenset[int]]:
        """A destination of the given kind; the victims that must not change; allowed exit codes."""
        counter[0] += 1
        d = root / f"d{counter[0]}"
        d.mkdir()
        if kind == "symlink":
            v = victim()
            (d / "out").symlink_to(v)
            return d / "out", {v: v.read_bytes()}, frozenset({0, 2})
        if kind == "dangling-symlink":
            (d / "out").symlink_to(victim_dir / f"created-{counter[0]}")
            return d / "out", {victim_dir / f"created-{counter[0]}": None}, frozenset({0, 2})  # type: ignore[dict-item]
        if kind == "missing-dir":
            return d / "no" / "such" / "out", {}, frozenset({2})
        if kind == "directory":
            (d / "out").mkdir()
            return d / "out", {}, frozenset({2})
        if kind == "fifo":
            os.mkfifo(d / "out")
            return d / "out", {}, frozenset({0, 2})
        if kind == "read-only-file":
            (d / "out").write_text("old")
            (d / "out").chmod(0o444)
            d.chmod(0o777)
            return d / "out", {}, frozenset({0, 2})
        if kind == "read-only-dir":
            d.chmod(0o555)
            return d / "out", {}, frozenset({2})
        raise ValueError(kind)

    kinds = [
        "symlink",
        "dangling-symlink",
        "missing-dir",
        "directory",
        "fifo",
        "read-only-file",
        "read-only-dir",
    ]
    if cfg.quick:
        kinds = ["symlink", "fifo"]
    run = root / "run"
    shutil.copytree(base, run, symlinks=True)
    _open_to_nobody(run)
    root.chmod(0o755)
    plan = ["plan", "--model", "llama-7b", "--gpus", "8", "--gpu", "a100-80gb"]
    for kind in kinds:
        nobody = kind.startswith("read-only")
        for what, argv in (
            ("report --format text --output", ["report", str(run), "--format", "text", "--output"]),
            ("report --format json --output", ["report", str(run), "--format", "json", "--output"]),
            ("report --format html --output", ["report", str(run), "--format", "html", "--output"]),
            ("compare --output", ["compare", str(run), str(run), "--output"]),
            ("plan --output", [*plan, "--output"]),
            ("report --export tensorboard=DIR", None),
        ):
            if cfg.quick and not what.startswith(("report --format html", "plan")):
                continue
            out, victims, codes = dest(kind)
            if argv is None:
                if kind in ("fifo", "read-only-file"):
                    continue
                argv2 = ["report", str(run), "--format", "json", "--export", f"tensorboard={out}"]
                if (
                    kind == "symlink"
                ):  # DIR a symlink to a directory: the user's own path (~/runs -> /scratch)
                    out.unlink()
                    vd = victim_dir / f"vdir-{counter[0]}"
                    vd.mkdir()
                    out.symlink_to(vd)
                    victims = {}
                # DIR is a directory by design: an existing one is written into, a missing one created
                codes = {"directory": frozenset({0}), "missing-dir": frozenset({0, 2})}.get(kind, codes)
                tries.append(Try("outputs", f"{what} ({kind})", argv2, root, codes, victims=victims, as_nobody=nobody))  # fmt: skip
                continue
            tries.append(Try("outputs", f"{what} ({kind})", [*argv, str(out)], root, codes, victims=victims,
                             as_nobody=nobody, timeout=60))  # fmt: skip
    # the default report.html in the run directory, planted
    for kind in ("symlink", "directory", "fifo"):
        r2 = root / f"run-default-{kind}"
        shutil.copytree(base, r2, symlinks=True)
        victims = {}
        if kind == "symlink":
            v = victim()
            (r2 / "report.html").symlink_to(v)
            victims = {v: v.read_bytes()}
        elif kind == "directory":
            (r2 / "report.html").mkdir()
        else:
            os.mkfifo(r2 / "report.html")
        tries.append(Try("outputs", f"report --format html, RUN/report.html is a {kind}", ["report", str(r2), "--format", "html"],
                         root, frozenset({0, 2}) if kind != "symlink" else frozenset({0}), victims=victims, timeout=60))  # fmt: skip
    # the column cache directory planted as a symlink (a big run is cached)
    if not cfg.quick:
        r3 = root / "run-cache-symlink"
        shutil.copytree(cfg.work / "reader" / "big-run-cached", r3, symlinks=True) if (
            cfg.work / "reader" / "big-run-cached"
        ).is_dir() else None
        if r3.is_dir():
            shutil.rmtree(r3 / ".ddp-doctor-cache", ignore_errors=True)
            vd = victim_dir / "cache-victim"
            vd.mkdir()
            (r3 / ".ddp-doctor-cache").symlink_to(vd)
            tries.append(Try("outputs", "report with RUN/.ddp-doctor-cache a symlink to another directory",
                             ["report", str(r3), "--format", "json"], root, frozenset({0}), check=_dir_untouched(vd), timeout=120))  # fmt: skip
    # lint --fix on a symlink: the target (maybe outside the project) must not be rewritten through it
    lf = root / "lintfix"
    lf.mkdir()
    v = victim_dir / "fixable.py"
    v.write_text("import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                 "m = DDP(torch.nn.Linear(1, 1), find_unused_parameters=True)\n")  # fmt: skip
    (lf / "train.py").symlink_to(v)
    tries.append(Try("outputs", "lint --fix on a symlinked file", ["lint", "--fix", str(lf / "train.py")], root,
                     victims={v: v.read_bytes()}))  # fmt: skip
    tries.append(Try("outputs", "lint --fix on a directory holding a symlinked file", ["lint", "--fix", str(lf)], root,
                     victims={v: v.read_bytes()}))  # fmt: skip
    # `run --out` into a directory where manifest.json is a planted symlink
    ro = root / "run-out-planted"
    ro.mkdir()
    v = victim()
    (ro / "manifest.json").symlink_to(v)
    tries.append(Try("outputs", "run --out DIR with DIR/manifest.json a planted symlink",
                     ["run", "--out", str(ro), "--", sys.executable, "-c", "pass"], root, victims={v: v.read_bytes()}))  # fmt: skip
    if cfg.quick:
        tries = [
            t
            for t in tries
            if "(" in t.name or "is a symlink" in t.name or t.name.startswith("lint --fix on a symlinked")
        ]
    return tries


def _dir_untouched(d: Path) -> Callable[[Outcome], list[str]]:
    def check(o: Outcome) -> list[str]:
        got = sorted(p.name for p in d.rglob("*"))
        return [f"output followed a directory symlink: {got[:3]} written into {d}"] if got else []

    return check
