"""Area `compare`: damaged runs on either side of `compare`."""

from __future__ import annotations

import json
from pathlib import Path

from .harness import Config, Outcome, Try, usable_rank


def compare_tries(base: Path, cfg: Config) -> list[Try]:
    root = cfg.work / "reader"
    names = ("header-only", "fifo-rank-file", "deep-json-losses-100k", "duplicate-steps", "sigkilled-rank",
             "manifest-missing", "string-losses", "step-2^62", "rank-file-is-dev-zero", "empty-rank-files",
             "ranks-is-a-file", "micro-steps-1e9", "world-size-1e9", "missing-rank-1")  # fmt: skip
    if cfg.quick:
        names = names[:2]
    tries = []
    for n in names:
        run = root / n
        for fmt in ("text", "json") if not cfg.quick else ("json",):
            codes = frozenset({0}) if usable_rank(run) else frozenset({0, 2})

            def check(o: Outcome, fmt: str = fmt) -> list[str]:
                if o.code == 0 and fmt == "json":
                    json.loads(o.stdout)
                return []

            tries.append(Try("compare", f"base vs {n} [{fmt}]", ["compare", str(base), str(run), "--format", fmt],
                             root, codes, check))  # fmt: skip
            tries.append(Try("compare", f"{n} vs base [{fmt}]", ["compare", str(run), str(base), "--format", fmt],
                             root, codes))  # fmt: skip
    return tries
