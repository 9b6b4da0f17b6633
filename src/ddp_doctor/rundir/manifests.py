"""The manifests of a run directory: one `manifest.json`, or one per `ddp-doctor run` instance.

When several `ddp-doctor run` processes record one job into one shared directory (one torchrun
agent per node, one process per Slurm task: docs/probe.md, "Several nodes"), each writes its own
`manifest.<instance>.json` (e.g. `manifest.node-1.json`), claimed with O_EXCL so that no two
instances (and no second job) share a name, while rank files stay one per global rank in `ranks/`.
The reader merges the instance manifests into one manifest with the fields of a single one
(docs/run-format.md) plus `instances`. No torch here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

INSTANCE_GLOB = "manifest.*.json"
_INSTANCE_NAME = re.compile(r"manifest\.((?:node|task|host)-[A-Za-z0-9._-]{1,64})\.json")
# More instance manifests than this are not read one by one (a damaged or hostile directory).
MAX_INSTANCES = 4096
MAX_MANIFEST_BYTES = 1 << 20


def instance_manifest_path(run_dir: Path, name: str) -> Path:
    return Path(run_dir) / f"manifest.{name}.json"


def instance_names(run_dir: Path) -> list[str]:
    """Names of the instance manifests present, sorted by their number where they have one."""
    names = []
    for path in Path(run_dir).glob(INSTANCE_GLOB):
        match = _INSTANCE_NAME.fullmatch(path.name)
        if match:
            names.append(match.group(1))
    return sorted(names, key=_order)[:MAX_INSTANCES]


def _order(name: str) -> tuple[str, int, str]:
    kind, _, rest = name.partition("-")
    return (kind, int(rest), "") if rest.isdigit() else (kind, -1, rest)


def _read(path: Path, problems: list[str]) -> dict[str, Any] | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_MANIFEST_BYTES:
            problems.append(f"{path.name}: not a regular file of at most {MAX_MANIFEST_BYTES} bytes; ignored")
            return None
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        problems.append(f"{path.name}: unreadable or not valid JSON ({type(exc).__name__}); ignored")
        return None
    if not isinstance(value, dict):
        problems.append(f"{path.name}: not a JSON object; ignored")
        return None
    return value


def merge_instances(run_dir: Path, problems: list[str]) -> dict[str, Any] | None:
    """One manifest for the instance manifests of `run_dir`; None when there are none.

    `start` is the earliest start, `end` the latest end and only when every instance has ended,
    `exit_code` the first non-zero one (else 0), `ranks` the rank files counted at the last end;
    command, level, every, versions and env come from the first instance. `instances` maps each
    name to its own manifest's host, start, end, exit code and command.
    """
    names = instance_names(run_dir)
    if not names:
        return None
    manifests: dict[str, dict[str, Any]] = {}
    for name in names:
        value = _read(instance_manifest_path(run_dir, name), problems)
        if value is not None:
            manifests[name] = value
    if not manifests:
        return {}
    first = next(iter(manifests.values()))
    merged: dict[str, Any] = {
        k: v for k, v in first.items() if k not in ("end", "exit_code", "ranks", "host")
    }
    starts = [m["start"] for m in manifests.values() if isinstance(m.get("start"), str)]
    if starts:
        merged["start"] = min(starts)
    ended = [m for m in manifests.values() if isinstance(m.get("end"), str)]
    expected = [m.get("instances_expected") for m in manifests.values()]
    expected_n = max((e for e in expected if isinstance(e, int) and not isinstance(e, bool)), default=None)
    if expected_n is not None and len(manifests) < expected_n:
        problems.append(
            f"{len(manifests)} of {expected_n} instance manifests present ({', '.join(manifests)}): "
            "a node or task has not started, or records into another directory"
        )
    if len(ended) == len(manifests) and (expected_n is None or len(manifests) >= expected_n):
        merged["end"] = max(m["end"] for m in ended)
        codes = [m.get("exit_code") for m in manifests.values()]
        merged["exit_code"] = next((c for c in codes if c not in (0, None)), 0)
        counts = [m["ranks"] for m in ended if isinstance(m.get("ranks"), int)]
        if counts:
            merged["ranks"] = max(counts)
    for key in ("level", "every", "command"):
        values = {json.dumps(m.get(key), sort_keys=True) for m in manifests.values()}
        if len(values) > 1 and key != "command":
            problems.append(f"instance manifests disagree on {key}: {sorted(values)}")
    merged["instances"] = {
        name: {k: m.get(k) for k in ("host", "start", "end", "exit_code", "command")}
        for name, m in manifests.items()
    }
    return merged
