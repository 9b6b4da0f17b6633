"""The generated parts of docs/: written from the code, checked by CI so they never go stale.

* docs/catalog.md — whole file, from :func:`ddp_doctor.core.catalog.docs.markdown`;
* docs/report.md — the thresholds table, from :func:`ddp_doctor.core.catalog.docs.thresholds_markdown`;
* docs/experiments.md — the interventions table, from
  :func:`ddp_doctor.probe.interventions.markdown_table`;
* docs/compare.md — the causes table, from :func:`ddp_doctor.compare.causes.markdown_table`;
* docs/lint.md — the rule table and the corpus sentence's rule counts, from
  :func:`ddp_doctor.lint.rules.markdown_table` and :func:`ddp_doctor.lint.rules.corpus_sentence`,
  and the snippet counts per rule, from the folders of tests/lint/corpus/ (:func:`lint_corpus_counts`);
* docs/equivalence.md — the worked example: `ddp-doctor equiv`'s output on the two run directories
  in docs/equivalence-example/ (recorded by tools/equiv_example.py), rendered by the command's renderer.

A generated section of a hand-written page sits between ``<!-- generated: NAME -->`` and
``<!-- end generated: NAME -->``. ``python -m ddp_doctor.gendocs --check`` exits 1 and names the
stale files; ``--write`` rewrites them.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from ddp_doctor.compare import causes
from ddp_doctor.core.catalog import docs as catalog_docs
from ddp_doctor.lint import rules
from ddp_doctor.probe import interventions

Part = tuple[str | None, Callable[[], str]]
EQUIV_EXAMPLE = Path("docs") / "equivalence-example"
LINT_CORPUS = Path("tests") / "lint" / "corpus"


def equiv_example() -> str:
    """`ddp-doctor equiv` on the stored example runs, as the command prints it (en and zh)."""
    from ddp_doctor.equiv import render, stages, verdict

    base = Path(__file__).resolve().parents[2] / EQUIV_EXAMPLE
    result = verdict.compare(stages.read(base / "one"), stages.read(base / "many"))
    result.run_a, result.run_b = str(EQUIV_EXAMPLE / "one"), str(EQUIV_EXAMPLE / "many")
    command = f"$ ddp-doctor equiv {result.run_a} {result.run_b}  # exit code {result.exit_code}\n"
    return (
        "```text\n" + command + render.render_text(result, "en") + "```\n\n"
        "`--lang zh`:\n\n```text\n" + "\n".join(render.summary_lines(result, "zh")) + "\n```\n"
    )


def lint_corpus_counts() -> str:
    """docs/lint.md's table of bad_*/good_* snippets per rule folder of the lint corpus (a hand-kept
    copy drifted as snippets were added)."""
    base = Path(__file__).resolve().parents[2] / LINT_CORPUS
    lines = ["| rule | bad | good |", "|---|---|---|"]
    for folder in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        names = [p.name for p in folder.glob("*.py")]
        bad = sum(n.startswith("bad_") for n in names)
        good = sum(n.startswith("good_") for n in names)
        lines.append(f"| {folder.name} | {bad} | {good} |")
    return "\n".join(lines) + "\n"


# file (relative to the repository root) -> its generated parts: (section name or None for the whole
# file, generator)
GENERATED: dict[str, tuple[Part, ...]] = {
    "docs/catalog.md": ((None, catalog_docs.markdown),),
    "docs/report.md": (("thresholds", catalog_docs.thresholds_markdown),),
    "docs/experiments.md": (("interventions", interventions.markdown_table),),
    "docs/compare.md": (("causes", causes.markdown_table),),
    "docs/lint.md": (
        ("lint-rules", rules.markdown_table),
        ("lint-corpus", rules.corpus_sentence),
        ("lint-corpus-counts", lint_corpus_counts),
    ),
    "docs/equivalence.md": (("equiv-example", equiv_example),),
}


def _section(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- generated: {re.escape(name)} -->\n)(.*?)(<!-- end generated: {re.escape(name)} -->)", re.S
    )


def render(current: str, section: str | None, body: str) -> str:
    """``current`` with its generated part replaced by ``body``; ValueError when the markers are missing."""
    if section is None:
        return body
    pattern = _section(section)
    if not pattern.search(current):
        raise ValueError(f"markers for the generated section {section!r} are missing")
    return pattern.sub(lambda m: m.group(1) + body + m.group(3), current, count=1)


def _fresh(current: str, parts: tuple[Part, ...]) -> str:
    for section, make in parts:
        current = render(current, section, make())
    return current


def stale(root: Path) -> list[str]:
    """The generated files under ``root`` whose committed text differs from the code's."""
    out = []
    for rel, parts in GENERATED.items():
        path = root / rel
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        try:
            fresh = _fresh(current, parts)
        except ValueError:
            out.append(rel)
            continue
        if fresh != current:
            out.append(rel)
    return out


def write(root: Path) -> list[str]:
    from ddp_doctor.core.safe_io import write_text

    changed = []
    for rel in stale(root):
        path = root / rel
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        write_text(path, _fresh(current, GENERATED[rel]))
        changed.append(rel)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ddp_doctor.gendocs", description=__doc__)
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="repository root (default: .)")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 when a generated doc is stale")
    mode.add_argument("--write", action="store_true", help="rewrite the stale generated docs")
    args = parser.parse_args(argv)
    if args.write:
        for rel in write(args.root):
            print(f"wrote {rel}")
        return 0
    old = stale(args.root)
    for rel in old:
        print(f"stale: {rel} (run `python -m ddp_doctor.gendocs --write`)", file=sys.stderr)
    return 1 if old else 0


if __name__ == "__main__":
    sys.exit(main())
