"""The run-directory layout (docs/run-format.md): names and paths shared by writer and reader.

The probe writes with these names; the analysis reads with them. Nothing here imports torch.
"""

from __future__ import annotations

from pathlib import Path

RUN_SCHEMA = "ddp-doctor.run/1"
RANK_SCHEMA = "ddp-doctor.rank/1"
MANIFEST = "manifest.json"
RANKS_DIR = "ranks"
TRAINER_DIR = "trainer"


def rank_file(run_dir: Path, rank: int) -> Path:
    return Path(run_dir) / RANKS_DIR / f"rank-{rank:05d}.jsonl"


def manifest_path(run_dir: Path) -> Path:
    return Path(run_dir) / MANIFEST
