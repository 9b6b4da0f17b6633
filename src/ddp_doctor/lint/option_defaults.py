"""The default of a configuration option written anywhere in the project, not only in the file
that tests it.

A trainer tests ``if args.sync_bn:`` while the option is declared in a parser module of its own
(``utils/parser.py``: ``add_argument('--sync_bn', action='store_true')``), or tests ``config.syncbn``
of a configuration class (``class Config: syncbn = False``), a dataclass field
(``sync_bn: bool = False``), an object set at module level in a shipped configuration
(``cfg.syncbn = False`` in ``configs/default_config.py``), or a key of the YAML configurations the
repository ships (``sync_bn: false``). The file alone gives no default and the test is trusted;
the project gives one when every place that writes the option agrees (``written_defaults`` per
file, merged by the project index; ``yaml_settings`` for the shipped YAML files). A YAML
configuration that sets it otherwise than the code makes it unknown again: the run's value is
then whichever configuration is chosen.
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

from ddp_doctor.lint.context import FileContext, dotted
from ddp_doctor.lint.discover import exclude_patterns, iter_files
from ddp_doctor.lint.flags import UNKNOWN, argparse_defaults, literal
from ddp_doctor.lint.source import read_text

MAX_YAML_FILES = 2000
MAX_YAML_BYTES = 1_000_000
YAML_SUFFIXES = (".yaml", ".yml")
# beyond lint's own excludes (discover.DEFAULT_EXCLUDES and .gitignore): hidden folders (CI workflows,
# editor settings) and installed packages hold no configuration of the project's training
YAML_EXCLUDES = (".*/", "site-packages/")
YAML_BOOLEANS = {
    "true": True,
    "yes": True,
    "on": True,
    "false": False,
    "no": False,
    "off": False,
    "null": None,
    "~": None,
}


def written_defaults(ctx: FileContext) -> dict[str, object]:
    """Option name -> literal default, as this file writes it: its argparse options (by ``dest``),
    the literal attributes of its classes' bodies (configuration classes and dataclasses), its
    module-level attribute settings (``cfg.syncbn = False``: the last attribute) and the entries of
    its module-level configuration dictionaries (``Config = dict(MODEL=...)``). A name the file
    writes with two values is left out."""
    found: dict[str, list[object]] = {}
    for dest, value in argparse_defaults(ctx).items():
        if not dest.startswith("--") and value is not UNKNOWN:
            found.setdefault(dest, []).append(value)
    for cls in ctx.of_type(ast.ClassDef):
        for stmt in cls.body:
            target, value = _assigned(stmt)
            if isinstance(target, ast.Name) and value is not None:
                _add(found, target.id, value)
    for stmt in ctx.tree.body:
        target, value = _assigned(stmt)
        if isinstance(target, ast.Attribute) and dotted(target) is not None and value is not None:
            _add(found, target.attr, value)
        elif isinstance(target, ast.Name) and value is not None:
            for key, item in _dict_entries(value):
                _add(found, key, item)
    return {k: v[0] for k, v in found.items() if all(_same(v[0], x) for x in v)}


def _dict_entries(value: ast.expr) -> list[tuple[str, ast.expr]]:
    """The string-keyed entries of a module-level configuration dictionary (imagenette-ddp's
    ``Config = dict(MODEL="efficientnet_b3", ...)`` read as ``Config["MODEL"]``, a ``CFG = {...}``
    literal)."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
        return [(k.arg, k.value) for k in value.keywords if k.arg is not None]
    if isinstance(value, ast.Dict):
        return [
            (k.value, v)
            for k, v in zip(value.keys, value.values)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)
        ]
    return []


def _assigned(stmt: ast.stmt) -> tuple[ast.expr | None, ast.expr | None]:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        return stmt.targets[0], stmt.value
    if isinstance(stmt, ast.AnnAssign):
        return stmt.target, stmt.value
    return None, None


def _add(found: dict[str, list[object]], key: str, node: ast.expr) -> None:
    value = literal(node)
    if value is not UNKNOWN and not isinstance(value, (list, dict, set, tuple)):
        found.setdefault(key, []).append(value)


def _same(a: object, b: object) -> bool:
    return a == b and type(a) is type(b)


def merge_default(table: dict[str, object], key: str, value: object, conflict: object) -> None:
    """Record ``value`` for ``key``; a key written with different values anywhere is ``conflict``."""
    known = table.get(key, value)
    table[key] = value if _same(known, value) else conflict


def yaml_files(root: Path) -> list[Path]:
    """The YAML files shipped under ``root``, found as lint finds source files (the same excludes and
    ``.gitignore``), hidden and installed-package folders skipped."""
    return list(
        itertools.islice(
            iter_files(root, exclude_patterns(root.resolve(), YAML_EXCLUDES), YAML_SUFFIXES), MAX_YAML_FILES
        )
    )


def yaml_settings(files: list[Path], key: str) -> list[object]:
    """Every scalar value the YAML ``files`` give ``key`` (``sync_bn: false``, ``SYNC_BN: True``;
    the key's case ignored, as yacs and Hydra configurations spell one option both ways)."""
    pattern = re.compile(rf"^\s*(?:-\s+)?{re.escape(key)}\s*:\s*([^#\s][^#]*?)\s*(?:#.*)?$", re.IGNORECASE)
    values: list[object] = []
    for path in files:
        text = read_text(path, MAX_YAML_BYTES)
        if text is None:
            continue
        if key.lower() not in text.lower():
            continue
        for line in text.splitlines():
            m = pattern.match(line)
            if m:
                values.append(yaml_scalar(m.group(1)))
    return values


def yaml_scalar(text: str) -> object:
    text = text.strip().strip("'\"")
    if text.lower() in YAML_BOOLEANS:
        return YAML_BOOLEANS[text.lower()]
    try:
        return int(text)
    except ValueError:
        return text


def option_default(ctx: FileContext, key: str) -> tuple[bool, object]:
    """``(known, value)``: the default of option ``key`` as the project writes it (project mode:
    ``ProjectIndex.option_default``), else as this file alone writes it."""
    if ctx.project is not None:
        known, value = ctx.project.option_default(key)
        return bool(known), value
    own = written_defaults(ctx)
    return key in own, own.get(key)
