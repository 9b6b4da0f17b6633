"""``[tool.ddp-doctor]`` in the nearest pyproject.toml: which rules to run and which paths to skip.

Keys: ``select`` (list of IDs; default all), ``ignore`` (list of IDs), ``exclude`` (list of
gitignore-style patterns, relative to the pyproject's folder). A malformed file is reported,
never fatal.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 ships no TOML reader
    tomllib = None


@dataclass(frozen=True)
class LintConfig:
    root: Path | None = None  # folder of the pyproject.toml it came from
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    problems: tuple[str, ...] = field(default=())


_CACHE: dict[Path, LintConfig] = {}


def config_for(path: Path) -> LintConfig:
    """The config of the nearest pyproject.toml at or above ``path``'s folder (cached per folder)."""
    folder = (path if path.is_dir() else path.parent).resolve()
    if folder in _CACHE:
        return _CACHE[folder]
    candidate = folder / "pyproject.toml"
    if candidate.is_file():
        config = _read(candidate)
    elif folder.parent != folder:
        config = config_for(folder.parent)
    else:
        config = LintConfig()
    _CACHE[folder] = config
    return config


def _read(pyproject: Path) -> LintConfig:
    root = pyproject.parent
    if tomllib is None:
        return LintConfig(
            root=root, problems=(f"{pyproject}: [tool.ddp-doctor] needs Python >= 3.11 to read",)
        )
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        reason = "nested too deep" if isinstance(exc, RecursionError) else exc
        return LintConfig(root=root, problems=(f"{pyproject}: cannot read: {reason}",))
    tool = data.get("tool", {})
    section = tool.get("ddp-doctor", {}) if isinstance(tool, dict) else {}
    if not isinstance(section, dict):
        return LintConfig(root=root, problems=(f"{pyproject}: [tool.ddp-doctor] must be a table",))
    problems: list[str] = []

    def strings(key: str) -> tuple[str, ...] | None:
        value = section.get(key)
        if value is None:
            return None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        problems.append(f"{pyproject}: [tool.ddp-doctor] {key} must be a list of strings")
        return None

    return LintConfig(
        root=root,
        select=strings("select"),
        ignore=strings("ignore") or (),
        exclude=strings("exclude") or (),
        problems=tuple(problems),
    )
