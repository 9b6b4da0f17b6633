"""Score ``ddp-doctor lint`` on the real-code corpus (tests/lint/real/corpus.toml).

Reads the scripts from a local cache (``<cache>/<owner>+<name>/<commit>/<path>``, filled by
``bench/lint_real_fetch.py``); needs no network, so it is not part of CI. Each script is linted
in project mode over its ``root``, or by naming its files (``--mode file``: ``ddp-doctor lint
train.py``, read in the project around each named file since round 18), or each file by itself
(``--mode alone``: ``--no-project``, what ``--mode file`` measured before round 18); only findings
in the script's ``files`` are scored. A finding matches a label with the same rule and file whose ``at``
range holds its line (two lines of slack, an exact range first, a label not yet hit first); several findings on one label count once; any other
finding in a scored file is a false positive. ``--no-gated`` scores without the config-gated
positives: their labels are dropped and a finding on one of them counts neither way.
``--no-near-copies`` leaves out the scripts that are near-copies of a script of another split
(``near_copies``: most of their lines are that script's lines), which a held-out split should not hold:
their score measures the tuning on the other script, not generalisation.

    python bench/lint_real.py --cache /work/lintcache [--split tune|holdout|holdout-2|all]
        [--mode project|file|alone] [--no-gated] [--no-near-copies] [--show] [--markdown]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

from ddp_doctor.core.catalog import lint_ids
from ddp_doctor.lint.engine import lint_paths

SLACK = 2
# A script is a near-copy of another when this share of its distinctive lines (stripped, longer than
# MIN_LINE characters: not `else:` or `return loss`) are lines of the other's scored files. Measured
# on the corpus of 2026-12-06: derived projects (TencentPretrain from UER-py, UniMatch's flow trainer
# from GMFlow) share 0.75-0.86; independent trainers of one lineage (HF run_* scripts, DDP tutorials)
# stay under 0.6.
NEAR_COPY = 0.7
MIN_LINE = 15
CORPUS = Path(__file__).resolve().parent.parent / "tests" / "lint" / "real" / "corpus.toml"


@dataclass
class Label:
    rule: str
    at: list[tuple[str, int, int]]
    gated: str | None
    hit: bool = False


@dataclass
class Tally:
    tp: int = 0
    fn: int = 0
    fp: int = 0
    notes: list[str] = field(default_factory=list)


def parse_at(text: str) -> tuple[str, int, int]:
    path, _, lines = text.rpartition(":")
    lo, _, hi = lines.partition("-")
    return path, int(lo), int(hi or lo)


def load(corpus: Path) -> list[dict]:
    with corpus.open("rb") as fh:
        return tomllib.load(fh)["script"]


def repo_dir(cache: Path, script: dict) -> Path:
    return cache / script["repo"].replace("/", "+") / script["commit"]


def lint_script(cache: Path, script: dict, mode: str) -> tuple[list, float, int]:
    base = repo_dir(cache, script)
    t0 = time.perf_counter()
    # The cache holds exactly the files git tracks at the pinned commit, so no .gitignore pattern may
    # hide one (git's rule, which lint follows in a work tree through `git ls-files`).
    if mode == "project":
        result = lint_paths([base / script.get("root", "")], project=True, respect_gitignore=False)
    else:
        paths = [base / f for f in script["files"]]
        result = lint_paths(paths, project=mode == "file", respect_gitignore=False)
    elapsed = time.perf_counter() - t0
    scored = {str((base / f).resolve()) for f in script["files"]}
    out = []
    for f in result.findings:
        path = str(Path(f.path).resolve())
        if path in scored:
            out.append((f.id, str(Path(path).relative_to(base.resolve())), f.line, f.evidence))
    return out, elapsed, result.files


def _lines(cache: Path, script: dict) -> set[str]:
    lines: set[str] = set()
    for f in script["files"]:
        path = repo_dir(cache, script) / f
        if path.is_file():
            with path.open(encoding="utf-8", errors="replace") as fh:
                lines.update(s for s in (raw.strip() for raw in fh) if len(s) > MIN_LINE)
    return lines


def near_copies(scripts: list[dict], everything: list[dict], cache: Path) -> dict[str, tuple[str, float]]:
    """Each of ``scripts`` that is a near-copy of a script of another split: id → (other id, share)."""
    # each script's files read once: ``scripts`` is a part of ``everything``
    lines = {s["id"]: _lines(cache, s) for s in everything}
    others = [(s, lines[s["id"]]) for s in everything]
    found: dict[str, tuple[str, float]] = {}
    for script in scripts:
        mine = lines[script["id"]]
        if not mine:
            continue
        best = max(
            (
                (len(mine & theirs) / len(mine), other["id"])
                for other, theirs in others
                if other.get("split", "tune") != script.get("split", "tune")
            ),
            default=(0.0, ""),
        )
        if best[0] >= NEAR_COPY:
            found[script["id"]] = (best[1], best[0])
    return found


def score(
    scripts: list[dict], cache: Path, mode: str, show: bool, gated: bool = True
) -> tuple[dict[str, Tally], dict]:
    tallies: dict[str, Tally] = defaultdict(Tally)
    stats = {"scripts": 0, "files": 0, "seconds": 0.0, "missing": []}
    for script in scripts:
        if not all((repo_dir(cache, script) / f).is_file() for f in script["files"]):
            stats["missing"].append(script["id"])
            continue
        labels = [
            Label(lab["rule"], [parse_at(a) for a in lab["at"]], lab.get("gated"))
            for lab in script.get("labels", [])
        ]
        findings, elapsed, nfiles = lint_script(cache, script, mode)
        stats["scripts"] += 1
        stats["files"] += nfiles
        stats["seconds"] += elapsed
        for rule, path, line, evidence in findings:
            match = _match(labels, rule, path, line)
            if match is not None and match.gated and not gated:
                continue  # scored without config-gated positives: neither a hit nor a false positive
            if match is None:
                tallies[rule].fp += 1
                tallies[rule].notes.append(f"FP {script['id']} {path}:{line}")
            elif not match.hit:
                match.hit = True
                tallies[rule].tp += 1
                gate = evidence.get("gated_by") if isinstance(evidence, dict) else None
                if show and match.gated and not gate:
                    tallies[rule].notes.append(f"TP (gate not stated) {script['id']} {path}:{line}")
        for lab in labels:
            if not lab.hit and (gated or not lab.gated):
                tallies[lab.rule].fn += 1
                where = ", ".join(f"{p}:{lo}-{hi}" for p, lo, hi in lab.at)
                tallies[lab.rule].notes.append(f"FN {script['id']} {where}")
    return tallies, stats


def _match(labels: list[Label], rule: str, path: str, line: int) -> Label | None:
    """The label a finding counts for: one whose range holds its line before one within the slack,
    and among those one not hit yet (two labels a few lines apart are two findings, not one)."""

    def near(lab: Label, slack: int) -> bool:
        return lab.rule == rule and any(
            p == path and lo - slack <= line <= hi + slack for p, lo, hi in lab.at
        )

    exact = [lab for lab in labels if near(lab, 0)]
    slack = [lab for lab in labels if near(lab, SLACK) and lab not in exact]
    for group in (exact, slack):
        fresh = [lab for lab in group if not lab.hit]
        if fresh or group:
            return (fresh or group)[0]
    return None


def ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "—"


def table(tallies: dict[str, Tally], markdown: bool) -> str:
    rows = []
    total = Tally()
    for rule in lint_ids():
        t = tallies.get(rule, Tally())
        total.tp, total.fn, total.fp = total.tp + t.tp, total.fn + t.fn, total.fp + t.fp
        if t.tp or t.fn or t.fp:
            rows.append((rule, t))
    rows.append(("**overall**" if markdown else "overall", total))
    if markdown:
        lines = ["| rule | positives | TP | FN | FP | recall | precision |", "|---|---|---|---|---|---|---|"]
        lines += [
            f"| {r} | {t.tp + t.fn} | {t.tp} | {t.fn} | {t.fp} | {ratio(t.tp, t.tp + t.fn)} | "
            f"{ratio(t.tp, t.tp + t.fp)} |"
            for r, t in rows
        ]
    else:
        lines = [f"{'rule':28} {'pos':>4} {'TP':>4} {'FN':>4} {'FP':>4} {'recall':>7} {'prec':>6}"]
        lines += [
            f"{r:28} {t.tp + t.fn:>4} {t.tp:>4} {t.fn:>4} {t.fp:>4} {ratio(t.tp, t.tp + t.fn):>7} "
            f"{ratio(t.tp, t.tp + t.fp):>6}"
            for r, t in rows
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--split", default="all", help="a corpus split (tune, holdout, holdout-2) or all")
    ap.add_argument("--mode", choices=("project", "file", "alone"), default="project")
    ap.add_argument("--show", action="store_true", help="list every FP and FN")
    ap.add_argument("--no-gated", action="store_true", help="score without the config-gated positives")
    ap.add_argument(
        "--no-near-copies", action="store_true", help="leave out near-copies of another split's scripts"
    )
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    everything = load(args.corpus)
    scripts = [s for s in everything if args.split == "all" or s.get("split", "tune") == args.split]
    if args.no_near_copies:
        copies = near_copies(scripts, everything, args.cache)
        for sid, (other, share) in sorted(copies.items()):
            print(f"left out: {sid} (a near-copy of {other}: {share:.2f} of its lines)")
        scripts = [s for s in scripts if s["id"] not in copies]
    tallies, stats = score(scripts, args.cache, args.mode, args.show, gated=not args.no_gated)
    print(table(tallies, args.markdown))
    print(
        f"\n{stats['scripts']} scripts, {stats['files']} files linted in {stats['seconds']:.1f} s "
        f"({args.mode} mode, split {args.split}{', without config-gated positives' if args.no_gated else ''})"
    )
    if stats["missing"]:
        print(f"not in the cache (run bench/lint_real_fetch.py): {', '.join(stats['missing'])}")
    if args.show:
        for rule, t in sorted(tallies.items()):
            for note in t.notes:
                print(f"  {rule}: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
