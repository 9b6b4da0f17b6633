"""Run the lint rules over files: parse, check, suppress, locate, and optionally fix.

The engine reads each file once, parses it with ``ast`` (never imports or executes it), builds
one ``FileContext`` and runs every selected rule on it. A file that cannot be read or parsed
yields a per-file ``Diagnostic`` and the run continues; a rule that fails on a file yields an
``internal-error`` diagnostic instead of stopping the run.

Suppression: ``# ddp-doctor: ignore[ID, ID]`` (or bare ``# ddp-doctor: ignore``) on the
reported line silences those findings there.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from ddp_doctor.core.catalog import FINDINGS, Severity, lint_ids
from ddp_doctor.core.findings import Finding
from ddp_doctor.lint.config import LintConfig, config_for
from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.discover import exclude_patterns, iter_files, respecting_gitignore
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.notebook import NotebookSource, read_notebook
from ddp_doctor.lint.project import ProjectIndex, attach
from ddp_doctor.lint.rules import RULES, Edit, Violation
from ddp_doctor.lint.source import parse_python, read_source

# Config-gated findings (the bug exists only when a flag has a given value) are reported one
# severity level below the catalog's, with the flag value in ``evidence["gated_by"]``.
GATED_SEVERITY: dict[Severity, Severity] = {"error": "warning", "warning": "info", "info": "info"}
SUPPRESS = re.compile(r"#\s*ddp-doctor:\s*ignore(?:\[(?P<ids>[^\]]*)\])?", re.IGNORECASE)


@dataclass(frozen=True)
class Diagnostic:
    """A file the linter could not check (or a rule that failed on it): never a finding."""

    path: str
    line: int | None
    kind: str  # "read-error" | "parse-error" | "internal-error" | "config-error" | "write-error"
    message: str

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "kind": self.kind, "message": self.message}


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)  # autofix edits of unsuppressed findings
    notebook: bool = False


@dataclass
class LintResult:
    findings: list[Finding] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    files: int = 0
    fixed: int = 0


def resolve_ids(select: tuple[str, ...] | None, ignore: tuple[str, ...]) -> tuple[str, ...]:
    """Selected rule IDs in catalog order; raises ValueError naming unknown IDs."""
    unknown = [i for i in (*(select or ()), *ignore) if i not in RULES]
    if unknown:
        raise ValueError(f"unknown lint id(s): {', '.join(unknown)}; known: {', '.join(lint_ids())}")
    chosen = set(select) if select else set(RULES)
    return tuple(i for i in lint_ids() if i in chosen and i not in ignore)


def lint_source(
    source: str,
    path: str,
    ids: tuple[str, ...] | None = None,
    notebook: NotebookSource | None = None,
    project: ProjectIndex | None = None,
) -> FileResult:
    """Lint one file's source text (``notebook`` maps lines back to cells)."""
    result = FileResult(path, notebook=notebook is not None)
    try:
        tree = parse_python(source, filename=path)
    except SyntaxError as exc:
        line = exc.lineno
        where = ""
        if notebook is not None and line:
            cell, line = notebook.locate(line)
            where = f" (cell {cell})"
        result.diagnostics.append(Diagnostic(path, line, "parse-error", f"cannot parse{where}: {exc.msg}"))
        return result
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, absurd nesting
        result.diagnostics.append(
            Diagnostic(path, None, "parse-error", f"cannot parse: {type(exc).__name__}: {exc}")
        )
        return result
    ids = tuple(i for i in (ids if ids is not None else tuple(RULES)) if RULES[i].may_apply(source, project))
    if not ids:
        return result  # parsed (so syntax errors are still reported), but no rule can match
    try:
        ctx = FileContext.build(path, source, tree)
        attach(ctx, project, Path(path))
        facts = LoopFacts(ctx)
    except RecursionError:
        result.diagnostics.append(Diagnostic(path, None, "parse-error", "cannot analyse: nesting too deep"))
        return result
    seen: set[tuple[str, int]] = set()
    for rule_id in ids:
        rule = RULES[rule_id]
        if not rule.applies(ctx):
            continue  # the identifier pre-check: a rule's check() may assume its required words
        try:
            violations = list(rule.check(ctx, facts))
        except RecursionError:
            result.diagnostics.append(
                Diagnostic(path, None, "internal-error", f"{rule_id}: nesting too deep")
            )
            continue
        except Exception as exc:  # a bug in one rule must not hide the other rules' results
            result.diagnostics.append(
                Diagnostic(path, None, "internal-error", f"{rule_id}: {type(exc).__name__}: {exc}")
            )
            continue
        for v in violations:
            if (v.rule_id, v.line) in seen or _suppressed(ctx.lines, v):
                continue
            if project is not None and project.reach.unreached(ctx.module, v.line):
                continue  # inside a def or class nothing in the project names: no run executes it
            seen.add((v.rule_id, v.line))
            result.findings.append(_to_finding(v, path, notebook))
            result.edits.extend(v.edits)
    return result


def _suppressed(lines: list[str], v: Violation) -> bool:
    for line in {v.line, v.end_line}:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        m = SUPPRESS.search(text)
        if m and (m.group("ids") is None or v.rule_id in {i.strip() for i in m.group("ids").split(",")}):
            return True
    return False


def _to_finding(v: Violation, path: str, notebook: NotebookSource | None) -> Finding:
    spec = FINDINGS[v.rule_id]
    evidence = dict(v.evidence)
    line = v.line
    if notebook is not None:
        evidence["cell"], line = notebook.locate(v.line)
    evidence["autofix"] = bool(v.edits) and notebook is None
    severity: Severity = spec.severity
    if v.gated_by:  # a bug only under a given flag value: one level below the catalog's severity
        evidence["gated_by"] = v.gated_by
        severity = GATED_SEVERITY[severity]
    return Finding(
        id=v.rule_id,
        status="confirmed",
        severity=severity,
        summary=v.message,
        evidence=evidence,
        fix=spec.fix,
        path=path,
        line=line,
        source="lint",
    )


def lint_file(
    path: Path, ids: tuple[str, ...] | None = None, project: ProjectIndex | None = None
) -> FileResult:
    shown = str(path)
    try:
        text, _ = read_source(path)
    except OSError as exc:
        return FileResult(
            shown, diagnostics=[Diagnostic(shown, None, "read-error", f"cannot read: {exc.strerror or exc}")]
        )
    except ValueError as exc:
        return FileResult(shown, diagnostics=[Diagnostic(shown, None, "read-error", str(exc))])
    if path.suffix == ".ipynb":
        try:
            nb = read_notebook(text)
        except ValueError as exc:
            return FileResult(
                shown, diagnostics=[Diagnostic(shown, None, "parse-error", str(exc))], notebook=True
            )
        return lint_source(nb.source, shown, ids, nb)
    return lint_source(text, shown, ids, project=project)


def apply_edits(source: str, edits: list[Edit]) -> tuple[str, int]:
    """Apply non-overlapping edits (later ones first); returns the new text and how many applied."""
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:
        return starts[min(max(line, 1), len(starts)) - 1] + col

    spans = sorted(
        ((offset(e.line, e.col), offset(e.end_line, e.end_col), e.text) for e in set(edits)), reverse=True
    )
    applied = 0
    limit = len(source) + 1
    for start, end, text in spans:
        if end > limit or (end == limit and start != end):
            continue  # overlaps an edit already applied
        source = source[:start] + text + source[end:]
        limit = start
        applied += 1
    return source, applied


def fix_file(path: Path, edits: list[Edit]) -> int:
    """Apply ``edits`` in place; raises OSError with a clear message when the file cannot be
    rewritten. Keeps the file's encoding, line endings and mode; writes a temporary file in the
    same folder and renames it over the original (never writes through a symlink)."""
    if path.is_symlink():
        raise OSError(f"{path}: is a symbolic link; not rewritten (fix its target instead)")
    if not os.access(path, os.W_OK) or not os.stat(path).st_mode & 0o222:  # (root ignores modes)
        raise OSError(f"{path}: file is read-only; not rewritten")
    source, encoding = read_source(path)
    newline = "\r\n" if "\r\n" in source else "\n"
    if newline != "\n":  # inserted lines carry "\n": give them the file's own line ending
        edits = [replace(e, text=e.text.replace("\r\n", "\n").replace("\n", newline)) for e in edits]
    new, applied = apply_edits(source, edits)
    if not applied:
        return 0
    from ddp_doctor.core.safe_io import write_bytes

    write_bytes(path, new.encode(encoding))  # atomic; keeps the file's mode; never through a symlink
    return applied


# The most files the project around a file named alone may hold: past that (a file named inside a
# large library) the file is linted by itself rather than indexing thousands of files for it.
ALONE_PROJECT_FILES = 2000


def alone_project_root(path: Path) -> Path:
    """The directory ``python <path>`` imports beside: the file's own, or the one above the top
    package holding it (``pkg/sub/mod.py`` with ``pkg/__init__.py`` and ``pkg/sub/__init__.py``)."""
    root = path.resolve().parent
    while (root / "__init__.py").is_file() and root.parent != root:
        root = root.parent
    return root


def _surrounding_index(
    path: Path,
    ids: tuple[str, ...],
    config: LintConfig,
    indexes: dict[tuple[Path, frozenset[str]], ProjectIndex | None],
) -> ProjectIndex | None:
    """The project index a file named alone is read in (``alone_project_root``), built once per root
    and fact set; None past ``ALONE_PROJECT_FILES`` or when the file is not one the index reads."""
    if path.suffix != ".py" or not path.is_file():
        return None
    root = alone_project_root(path)
    facts = frozenset(fact for i in ids for fact in RULES[i].project_facts)
    key = (root, facts)
    if key not in indexes:
        excludes = exclude_patterns(config.root, config.exclude) if config.root else []
        found: list[Path] = []
        for f in iter_files(root, excludes):
            found.append(f)
            if len(found) > ALONE_PROJECT_FILES:
                break
        named = path.resolve()
        if len(found) > ALONE_PROJECT_FILES or all(f.resolve() != named for f in found):
            indexes[key] = None
        else:
            indexes[key] = ProjectIndex.build(root, sorted(found), facts)
    return indexes[key]


def lint_paths(
    paths: list[Path],
    select: tuple[str, ...] | None = None,
    ignore: tuple[str, ...] = (),
    fix: bool = False,
    project: bool = True,
    respect_gitignore: bool = True,
) -> LintResult:
    """Lint files and directories. CLI ``select`` replaces the config's; ``ignore`` adds to it.

    With ``project`` (the default), each directory is read as one project first
    (``lint/project.py``) so facts cross its files. A file named alone (``ddp-doctor lint
    train.py``, how a new user tries it) is read in the project around it: its directory, or the
    directory above its top package when it sits in one (what ``python train.py`` imports from),
    up to ``ALONE_PROJECT_FILES`` files; only the named file is reported. Beyond that, and with
    ``project=False``, it is linted by itself. ``respect_gitignore=False`` reads the files that
    ``.gitignore`` patterns match too (``lint/discover.py``: they only hide untracked files).
    """
    with respecting_gitignore(respect_gitignore):
        return _lint_paths(paths, select, ignore, fix, project)


def _lint_paths(
    paths: list[Path], select: tuple[str, ...] | None, ignore: tuple[str, ...], fix: bool, project: bool
) -> LintResult:
    result = LintResult()
    files: list[tuple[Path, tuple[str, ...], ProjectIndex | None]] = []
    indexes: dict[tuple[Path, frozenset[str]], ProjectIndex | None] = {}  # one per root for named files

    def ids_of(config: LintConfig) -> tuple[str, ...]:
        return resolve_ids(select if select is not None else config.select, (*config.ignore, *ignore))

    for given in paths:
        config = config_for(given)
        result.diagnostics.extend(Diagnostic(str(given), None, "config-error", p) for p in config.problems)
        if given.is_dir():
            excludes = exclude_patterns(config.root, config.exclude) if config.root else []
            found = [(f, ids_of(config_for(f))) for f in sorted(iter_files(given, excludes))]
            # the index computes the project facts the rules run on these files read (Rule.project_facts)
            facts = frozenset(fact for _, ids in found for i in ids for fact in RULES[i].project_facts)
            index = ProjectIndex.build(given, [f for f, _ in found], facts) if project else None
            files.extend((f, ids, index) for f, ids in found)
        else:
            ids = ids_of(config)
            files.append((given, ids, _surrounding_index(given, ids, config, indexes) if project else None))
    for path, ids, index in files:
        file_result = lint_file(path, ids, index)
        if fix and file_result.edits and not file_result.notebook:
            try:
                result.fixed += fix_file(path, file_result.edits)
            except (OSError, ValueError) as exc:
                msg = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                file_result.diagnostics.append(
                    Diagnostic(str(path), None, "write-error", f"cannot fix: {msg}")
                )
            else:
                file_result = lint_file(path, ids, index)
        result.files += 1
        result.findings.extend(file_result.findings)
        result.diagnostics.extend(file_result.diagnostics)
    return result
