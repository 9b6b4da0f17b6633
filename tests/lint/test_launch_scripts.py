"""lint/launch_scripts.py: the values shipped shell launch scripts give an option."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ddp_doctor.lint.flags import UNKNOWN
from ddp_doctor.lint.launch_scripts import (
    FLAG,
    launch_files,
    launch_settings,
    option_value,
    spelled,
    spellings,
)


def _settings(tmp_path: Path, text: str, option: str = "sync_bn") -> list[object]:
    (tmp_path / "run.sh").write_text(text, encoding="utf-8")
    return [v for v, _ in launch_settings(launch_files(tmp_path), spellings(option), tmp_path)]


def test_spellings_cover_dashes_and_underscores() -> None:
    assert spellings("sync_bn") == ("--sync_bn", "--sync-bn")
    assert spellings("--find-unused") == ("--find-unused", "--find_unused")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("torchrun train.py --sync_bn\n", [FLAG]),
        ("torchrun train.py --sync_bn --lr 0.1\n", [FLAG]),
        ("torchrun train.py --sync_bn && echo done\n", [FLAG]),
        ("torchrun train.py --sync-bn=0\n", [0]),
        ("torchrun train.py --sync_bn False --lr 1\n", [False]),
        ("torchrun train.py --sync_bn true\n", [True]),
        ("torchrun train.py \\\n  --lr 0.1 \\\n  --sync_bn 1\n", [1]),
        ("torchrun train.py --sync_bn $SYNC\n", [UNKNOWN]),
        ('torchrun train.py --sync_bn "$(cat flag)"\n', [UNKNOWN]),
        ("# torchrun train.py --sync_bn\n", []),
        ("torchrun train.py --lr 0.1  # --sync_bn for the big model\n", []),
        ("torchrun train.py --sync_bnx\n", []),
        ("torchrun train.py --sync_bn 'unclosed\n", ["unclosed"]),  # split on blanks, quotes stripped
        ("torchrun train.py --offset -1 --sync_bn -2\n", [-2]),
    ],
)
def test_values_read_from_commands(tmp_path: Path, text: str, expected: list[object]) -> None:
    assert _settings(tmp_path, text) == expected


def test_a_switch_is_the_opposite_of_a_boolean_default() -> None:
    assert option_value(FLAG, False) is True
    assert option_value(FLAG, None) is True
    assert option_value(FLAG, True) is False
    assert option_value(FLAG, 1) is True
    assert option_value(0, True) == 0
    assert spelled("syncbn", 0) == "--syncbn=0"
    assert spelled("--find_unused", FLAG) == "--find_unused"


def test_scripts_found_under_the_root_with_lints_excludes(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "a.sh").write_text("torchrun t.py --sync_bn\n")
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "b.sh").write_text("torchrun t.py --sync_bn 0\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "c.sh").write_text("torchrun t.py --sync_bn 0\n")
    (tmp_path / "notes.txt").write_text("torchrun t.py --sync_bn 0\n")
    found = launch_settings(launch_files(tmp_path), spellings("sync_bn"), tmp_path)
    assert found == [(FLAG, str(Path("scripts") / "a.sh"))]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_hostile_files_are_skipped(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.sh")  # never read: it would block
    (tmp_path / "big.sh").write_text("torchrun t.py --sync_bn\n" + "#" * 1_100_000)
    (tmp_path / "bad.sh").write_bytes(b"torchrun t.py \xff\xfe --sync_bn 0\n")
    found = launch_settings(launch_files(tmp_path), spellings("sync_bn"), tmp_path)
    assert found == [(0, "bad.sh")]
