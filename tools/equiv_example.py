"""Regenerate the worked example of docs/equivalence.md: run the command, keep its two run dirs.

    python tools/equiv_example.py            # ~1 min on 2 CPU cores

Runs `ddp-doctor equiv` on the reference trainer (world 1, accumulation 4 vs world 2, accumulation 2,
with the `loss-unscaled` fault on the world-2 run) and stores both run directories, trimmed to the
records the comparison reads (header, config, step, fingerprint with its last micro-step, end), in
docs/equivalence-example/. `python -m ddp_doctor.gendocs --write` then renders the example section
of docs/equivalence.md from them, and `--check` keeps it current (tests/test_docs_current.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "equivalence-example"
KEEP = ("header", "config", "step", "fingerprint", "end")
TRAINER = ["-m", "ddp_doctor.trainer", "--steps", "2", "--seq-len", "32", "--no-progress"]
COMMAND = [
    "--nproc", "2", "--steps", "2", "--one", "--accum 4", "--many", "--accum 2 --fault loss-unscaled",
]  # fmt: skip


def _trim(src: Path, dst: Path) -> None:
    (dst / "ranks").mkdir(parents=True)
    manifest = json.loads((src / "manifest.json").read_text())
    keep = {
        k: manifest[k]
        for k in ("schema", "level", "every", "interventions", "start", "end", "exit_code")
        if k in manifest
    }
    keep["command"] = ["python", "-m", "torch.distributed.run", "…", *TRAINER]
    (dst / "manifest.json").write_text(json.dumps(keep, indent=2) + "\n")
    for rank_file in sorted((src / "ranks").glob("rank-*.jsonl")):
        lines = []
        for line in rank_file.read_text().splitlines():
            rec = json.loads(line)
            if rec["kind"] not in KEEP:
                continue
            if rec["kind"] == "fingerprint":
                rec["local"] = rec["local"][-1:]
            for key in ("host", "pid", "time"):  # machine-specific, not read by the comparison
                rec.pop(key, None)
            lines.append(json.dumps(rec, separators=(",", ":")))
        (dst / "ranks" / rank_file.name).write_text("\n".join(lines) + "\n")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        proc = subprocess.run(
            [sys.executable, "-m", "ddp_doctor.cli", "equiv", "--out", str(runs), *COMMAND, "--", *TRAINER],
            capture_output=True,
            text=True,
        )
        if proc.returncode not in (0, 1, 2) or not proc.stdout:
            print(proc.stderr[-4000:], file=sys.stderr)
            return 1
        shutil.rmtree(EXAMPLE, ignore_errors=True)
        for name in ("one", "many"):
            _trim(runs / name, EXAMPLE / name)
    print(f"wrote {EXAMPLE.relative_to(ROOT)}; now run: python -m ddp_doctor.gendocs --write")
    return 0


if __name__ == "__main__":
    sys.exit(main())
