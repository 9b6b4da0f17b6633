"""Area `escapes`: control characters from the run must not reach the terminal."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from .harness import PAYLOAD, Config, Try, edit, edit_manifest, rank_path
from .lint import DDP_SCRIPT

# --- escapes: control characters from the run must not reach the terminal ---------------------------------------


def escape_tries(base: Path, cfg: Config) -> list[Try]:
    root = cfg.work / "escapes"
    root.mkdir(parents=True, exist_ok=True)
    tries: list[Try] = []
    run = root / "run"
    shutil.copytree(base, run, symlinks=True)
    p = PAYLOAD

    def inject(rec: dict) -> dict:
        k = rec.get("kind")
        if k == "header":
            return dict(rec, host="node" + p)
        if k == "config" and rec.get("what") == "ddp":
            return dict(rec, module="Model" + p, batchnorm=["bn" + p])
        if k == "config" and rec.get("what") == "optimizer":
            return dict(rec, type="AdamW" + p)
        if k == "config" and rec.get("what") == "params":
            return dict(rec, names=[n + p for n in rec["names"]])
        if k == "unused":
            return dict(rec, names=["lm_head" + p])
        if k == "update":
            return dict(rec, tensors=[dict(t, name=t["name"] + p) for t in rec["tensors"]])
        return rec

    edit(run, inject)
    with open(rank_path(run, 1), "a") as fh:
        fh.write(json.dumps({"kind": "probe_error", "instrument": "x" + p, "step": 1, "error": "RuntimeError: " + p,
                             "traceback": p}) + "\n")  # fmt: skip
        fh.write(json.dumps({"kind": "logged_loss", "step": 1, "micro": 0, "source": "stdout", "key": "loss" + p,
                             "value": 1.0, "resolution": 0.01, "rank": 1}) + "\n")  # fmt: skip
        fh.write('{"kind": "step", "step": "' + p + '"}\n')  # a corrupt line quoted in a problem
    edit_manifest(
        run, lambda m: dict(m, command=["python", "train.py", "--name=" + p], cwd="/home/" + p, host="h" + p)
    )
    named = root / ("run" + p)
    shutil.copytree(base, named, symlinks=True)
    (named / "manifest.json").write_text("{")  # a problem that names the path
    missing = root / ("missing" + p)
    for fmt in ("text", "json"):
        for on_pty in (False, True):
            tag = "pty" if on_pty else "pipe"
            tries.append(Try("escapes", f"injected strings in every record, report [{fmt}, {tag}]",
                             ["report", str(run), "--format", fmt], root, frozenset({0}), on_pty=on_pty))  # fmt: skip
            tries.append(Try("escapes", f"run dir named with ESC/OSC/BEL, report [{fmt}, {tag}]",
                             ["report", str(named), "--format", fmt], root, frozenset({0}), on_pty=on_pty))  # fmt: skip
    for on_pty in (False, True):
        tag = "pty" if on_pty else "pipe"
        tries += [
            Try("escapes", f"report of a missing path with ESC [{tag}]", ["report", str(missing)], root, frozenset({2}), on_pty=on_pty),
            Try("escapes", f"compare with an injected side [{tag}]", ["compare", str(base), str(run)], root, frozenset({0}), on_pty=on_pty),
            Try("escapes", f"plan --model path with ESC [{tag}]", ["plan", "--model", str(missing), "--gpus", "1"], root, frozenset({2}), on_pty=on_pty),
            Try("escapes", f"report --output path with ESC [{tag}]", ["report", str(run), "--format", "json", "--output", str(root / ("o" + p))],
                root, frozenset({0, 2}), on_pty=on_pty),
        ]  # fmt: skip
    src = root / "src"
    src.mkdir()
    (src / ("train" + p + ".py")).write_text(DDP_SCRIPT)
    (src / "names.py").write_text(DDP_SCRIPT.replace("torch.nn.Linear(10, 10)", f"Net{p!r}"[:0] + "Net()")
                                  .replace("def main():", f"class Net(torch.nn.Module):\n    name = {p!r}\n\n\ndef main():"))  # fmt: skip
    for fmt in ("text", "json", "sarif"):
        for on_pty in (False, True):
            tag = "pty" if on_pty else "pipe"
            tries.append(Try("escapes", f"lint a file named with ESC [{fmt}, {tag}]", ["lint", str(src), "--format", fmt], root,
                             on_pty=on_pty))  # fmt: skip
    out = root / "run-argv"
    tries.append(Try("escapes", "run with ESC in --out and in the command's argv [pty]",
                     ["run", "--out", str(out) + p, "--", sys.executable, "-c", "pass", "--name=" + p], root, on_pty=True))  # fmt: skip
    if cfg.quick:
        tries = [t for t in tries if "pty" in t.name and ("injected strings" in t.name or "lint" in t.name)][
            ::2
        ]
    return tries
