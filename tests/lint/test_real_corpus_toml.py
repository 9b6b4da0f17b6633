"""The real-code corpus (tests/lint/real/corpus.toml) is well formed, without its code.

bench/lint_real.py scores the corpus against a local cache of the public repositories (not in CI);
a label that names an unknown rule, a file the script does not score, a reversed line range, or an
id used twice would silently score as a miss or vanish. These checks need only the TOML.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib

from ddp_doctor.core.catalog import lint_ids

CORPUS = Path(__file__).resolve().parent / "real" / "corpus.toml"
SPLIT = re.compile(r"tune|holdout(-\d+)?")
COMMIT = re.compile(r"[0-9a-f]{40}")
AT = re.compile(r"(?P<path>[^:]+):(?P<lo>\d+)(-(?P<hi>\d+))?")
LABEL_KEYS = {"rule", "at", "note", "gated"}


def _scripts() -> list[dict]:
    with CORPUS.open("rb") as fh:
        return tomllib.load(fh)["script"]


SCRIPTS = _scripts()


def test_ids_are_unique() -> None:
    ids = [s["id"] for s in SCRIPTS]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


def test_every_split_is_held_out_or_tune() -> None:
    # a split the bench would not name (a typo) would be scored in no split but "all"
    bad = [(s["id"], s.get("split")) for s in SCRIPTS if not SPLIT.fullmatch(str(s.get("split")))]
    assert not bad


@pytest.mark.parametrize("script", SCRIPTS, ids=[s["id"] for s in SCRIPTS])
def test_script_entry(script: dict) -> None:
    assert "/" in script["repo"]
    assert COMMIT.fullmatch(script["commit"]), "pinned at a full commit"
    files = script["files"]
    assert files and all(not f.startswith("/") and ".." not in Path(f).parts for f in files)
    root = script.get("root", "")
    assert all(f == root or f.startswith(root.rstrip("/") + "/") or not root for f in files), (
        "project mode lints `root`: every scored file must lie inside it"
    )
    rules = set(lint_ids())
    for label in script.get("labels", []):
        assert set(label) <= LABEL_KEYS, set(label) - LABEL_KEYS
        assert label["rule"] in rules, label["rule"]
        if "gated" in label:
            assert label["gated"].strip(), "a gated label names its gate"
        assert label["at"]
        for at in label["at"]:
            m = AT.fullmatch(at)
            assert m, at
            lo, hi = int(m["lo"]), int(m["hi"] or m["lo"])
            assert 1 <= lo <= hi, at
            # a label outside the scored files is never matched: only findings there are scored
            assert any(m["path"] == f for f in files) or label["at"].index(at) > 0, (
                f"{at}: the first place of a label must be in one of the script's files {files}"
            )
