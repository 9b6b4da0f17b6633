"""Rewrite old ddp_doctor module paths to the new package layout (issue 23, the folder moves).

    python tools/moves.py FILE...            rewrite in place, print the files it changed
    python tools/moves.py --check FILE...    change nothing; exit 1 when some file still names an old path
    git diff --name-only main...HEAD | xargs python tools/moves.py

Then `ruff check --select I --fix FILE... && ruff format FILE...` sorts the imports it moved.

MOVES is the one table of the moves. Three spellings of a module are rewritten:

* dotted names anywhere (imports, `mock.patch("ddp_doctor.probe.launcher.x")`, `-m ...`, mypy
  overrides): `ddp_doctor.probe.launcher` -> `ddp_doctor.launch.launcher`;
* names imported from a parent package: `from ddp_doctor import rankfile, records` ->
  `from ddp_doctor.rundir import rankfile, records` (split over several lines when the names now
  live in different packages; a renamed module keeps its local name: `... import safe_io as safe_write`);
* file paths in comments and docs: `probe/command.py` -> `launch/command.py`, and the bare names of
  the former top-level modules (`rankfile.py` -> `rundir/rankfile.py`).

Running it twice changes nothing the second time (`ddp_doctor.rundir` is both the old reader module
and the new package: the new spellings are recognised and left alone).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

# old module (relative to ddp_doctor) -> new module. Packages (probe.inject) move with their files.
MOVES: dict[str, str] = {
    "catalog": "core.catalog",
    "findings": "core.findings",
    "safe_write": "core.safe_io",
    "terminal": "core.terminal",
    "redact": "core.redact",
    "records": "rundir.records",
    "manifests": "rundir.manifests",
    "rundir": "rundir.reader",
    "rankfile": "rundir.rankfile",
    "teardown": "rundir.teardown",
    "probe.command": "launch.command",
    "probe.launcher": "launch.launcher",
    "probe.claim": "launch.claim",
    "probe.deepspeed_env": "launch.deepspeed_env",
    "probe.exits": "launch.exits",
    "probe.inject": "launch.inject",
    "analysis.compare": "compare.analysis",
    "report.compare_command": "compare.command",
    "report.compare_render": "compare.render",
    # phase 2: the importers became registered log sources (rundir/sources/)
    "importers": "rundir.sources",
    "importers.detect": "rundir.sources",  # detect/read_log/LogImportError: the registry's detect/read
    "importers.series": "rundir.sources.series",
    "importers.reduced": "rundir.sources.logs",
    "importers.trainer_state": "rundir.sources.trainer_state",
    "importers.tensorboard": "rundir.sources.tensorboard",
    "importers.wandb_offline": "rundir.sources.wandb_offline",
}
PACKAGES = {"probe.inject", "importers"}  # directories, not .py files
NEW_PACKAGES = {"rundir.sources"}  # a module that became a package: its path is PACKAGE/__init__.py


def _children(package: str) -> set[str]:
    """Submodules the new layout puts directly under `package` (to recognise new spellings)."""
    prefix = package + "."
    return {new[len(prefix) :].split(".")[0] for new in MOVES.values() if new.startswith(prefix)}


def _dotted(text: str) -> str:
    for old in sorted(MOVES, key=len, reverse=True):
        new = MOVES[old]
        guard = ""
        kids = _children(old)
        if kids:  # the old module is now a package: leave `ddp_doctor.rundir.reader`, `... import reader`
            alts = "|".join(sorted(kids))
            guard = rf"(?!\.(?:{alts})\b)(?! import \(?\s*(?:{alts})\b)"
        text = re.sub(rf"(?<![\w.])ddp_doctor\.{re.escape(old)}(?![\w]){guard}", f"ddp_doctor.{new}", text)
    return text


_FROM = re.compile(r"^([ \t]*)from (ddp_doctor(?:\.\w+)*) import (\([^)]*\)|[^\n]*)", re.MULTILINE)


def _from_imports(text: str) -> str:
    def rewrite(match: re.Match[str]) -> str:
        indent, module, names = match.group(1), match.group(2), match.group(3)
        base = module[len("ddp_doctor") :].lstrip(".")
        body = names.strip()
        comment = ""
        if not body.startswith("(") and "#" in body:
            body, comment = body.split("#", 1)
            comment = "  #" + comment
        body = body.strip().strip("()")
        parts = [p.strip() for p in re.sub(r"#[^\n]*", "", body).replace("\n", " ").split(",") if p.strip()]
        groups: dict[str, list[str]] = {}
        changed = False
        for part in parts:
            name, _, alias = part.partition(" as ")
            name, alias = name.strip(), alias.strip()
            full = f"{base}.{name}" if base else name
            if full in MOVES:
                changed = True
                new_parent, _, new_name = MOVES[full].rpartition(".")
                if new_name != name and not alias:
                    alias = name
                groups.setdefault(new_parent, []).append(f"{new_name} as {alias}" if alias else new_name)
            else:
                groups.setdefault(base, []).append(part)
        if not changed:
            return match.group(0)
        lines = []
        for parent, items in groups.items():
            target = f"ddp_doctor.{parent}" if parent else "ddp_doctor"
            lines.append(f"{indent}from {target} import {', '.join(items)}")
        return "\n".join(lines) + comment

    return _FROM.sub(rewrite, text)


def _paths(text: str) -> str:
    for old in sorted(MOVES, key=len, reverse=True):
        old_path, new_path = old.replace(".", "/"), MOVES[old].replace(".", "/")
        if old in PACKAGES:  # `probe/inject/`, `probe/inject`; a one-word name only as `importers/`
            after = r"(?![\w.])" if "/" in old_path else r"(?=/)"
            text = re.sub(rf"(?<![\w./]){re.escape(old_path)}{after}", new_path, text)
            continue
        new_file = f"{new_path}/__init__.py" if MOVES[old] in NEW_PACKAGES else f"{new_path}.py"
        if "/" in old_path:
            text = re.sub(rf"(?<![\w.]){re.escape(old_path)}\.py(?!\w)", new_file, text)
        else:  # a former top-level module: `ddp_doctor/rankfile.py` and the bare `rankfile.py`
            text = re.sub(rf"(?<=ddp_doctor/){re.escape(old_path)}\.py(?!\w)", new_file, text)
            text = re.sub(rf"(?<![\w/.\\-]){re.escape(old_path)}\.py(?!\w)", new_file, text)
    return text


def rewrite(text: str) -> str:
    return _paths(_dotted(_from_imports(text)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args(argv)
    stale = []
    for path in args.files:
        if not path.is_file() or path.is_symlink() or path.resolve() == Path(__file__).resolve():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite(text)
        if new != text:
            stale.append(path)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    for path in stale:
        print(path)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
