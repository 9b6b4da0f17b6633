"""A :class:`LogSeries` as a reduced run: the run data of a log (docs/run-format.md, docs/import.md).

One rank file holds the logged series as one "rank" that stands for the whole job: the logged loss
is the job's loss (HF, Lightning and most scripts log a rank-averaged value). Each logged loss step
becomes a ``step`` record with one micro-step:

* ``losses``/``loss_fn``: the logged loss (a NaN stays NaN: the ``nonfinite`` check sees it);
* ``samples``/``tokens``: the global batch from the flags (world size × micro-batch × accum,
  × tokens per sample) or null;
* ``lr``, ``scale``: as logged; ``skipped``: the loss scale went down since the previous logged
  step (a GradScaler / DeepSpeed backoff happens exactly on a skipped step);
* ``clip``: ``{"max_norm": --max-norm or null, "total_norm": logged grad_norm}`` — HF's logged
  ``grad_norm`` is ``clip_grad_norm_``'s return value, the norm before clipping.

The manifest's ``imported`` block says where the data came from and which fields exist; the
analysis reports only the findings those fields support (analysis/reduced.py). Nothing is
written to disk.
"""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path
from typing import Any

from ddp_doctor.rundir import records
from ddp_doctor.rundir.rankfile import Problems, parse_rank_bytes, to_columns
from ddp_doctor.rundir.reader import RANK_SCHEMA, RUN_SCHEMA, RunData
from ddp_doctor.rundir.sources.base import LogImportError
from ddp_doctor.rundir.sources.series import ImportOptions, LogSeries
from ddp_doctor.rundir.teardown import ExitStatus


def _json_num(x: float | None) -> float | str | None:
    if x is None:
        return None
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _by_step(points: list[tuple[int, float]], base: int) -> tuple[dict[int, float], int]:
    """Step index → value (the last one logged for a step wins: a resumed run re-logs steps)."""
    out: dict[int, float] = {}
    dup = 0
    for step, value in points:
        t = step - base
        if t < 0:
            continue
        dup += t in out
        out[t] = value
    return out, dup


def build_records(
    series: LogSeries, options: ImportOptions, title: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The step records and the manifest's ``imported`` block; raises LogImportError without a loss."""
    keys = series.mapped(options.keys)
    if "loss" not in keys:
        names = ", ".join(sorted(series.scalars)[:30]) or "none"
        raise LogImportError(
            f"{series.path}: no loss scalar found (scalars: {names}); name it with --key loss=NAME"
        )
    cols: dict[str, dict[int, float]] = {}
    for fld, key in keys.items():
        cols[fld], dup = _by_step(series.scalars[key], series.step_base)
        if dup and fld == "loss":
            series.problems.append(
                f"{dup} step(s) logged more than once under {key!r} (a resumed run?): the last value is used"
            )
    steps = sorted(cols["loss"])
    micro = options.micro_batch
    if micro is None and isinstance(series.facts.get("train_batch_size"), int):
        micro = int(series.facts["train_batch_size"])
        series.problems.append(f"micro-batch {micro} per rank taken from the log's train_batch_size")
    opts = ImportOptions(
        keys=options.keys,
        world_size=options.world_size,
        micro_batch=micro,
        accum=options.accum,
        tokens_per_sample=options.tokens_per_sample,
        max_norm=options.max_norm,
    )
    batch = opts.global_batch()
    tokens = batch * opts.tokens_per_sample if batch is not None and opts.tokens_per_sample else None
    lr, gn, sc = cols.get("lr", {}), cols.get("grad_norm", {}), cols.get("loss_scale", {})
    records: list[dict[str, Any]] = []
    prev_scale: float | None = None
    for t in steps:
        scale = sc.get(t)
        skipped = bool(scale is not None and prev_scale is not None and scale < prev_scale)
        if scale is not None and math.isfinite(scale):
            prev_scale = scale
        loss = cols["loss"][t]
        rec: dict[str, Any] = {
            "kind": "step",
            "step": t,
            "micro_steps": 1,
            "losses": [_json_num(loss)],
            "loss_fn": [{"value": _json_num(loss), "reduction": "mean", "n_valid": None}],
            "samples": [batch],
            "tokens": [tokens],
            "lr": [_json_num(lr.get(t, math.nan))],
            "skipped": skipped,
            "scale": _json_num(scale),
        }
        g = gn.get(t)
        if g is not None:
            rec["clip"] = [{"max_norm": opts.max_norm, "total_norm": _json_num(g)}]
            if not math.isfinite(g) and not skipped:
                rec["nonfinite"] = {"where": "grad", "micro": 0, "bucket": None, "param": None}
        records.append(rec)
    gaps = [b - a for a, b in zip(steps, steps[1:])]
    interval = int(statistics.median(gaps)) if gaps else 1
    for fld in ("lr", "grad_norm", "loss_scale"):
        if fld in cols and cols[fld] and not set(cols[fld]) & set(steps):
            series.problems.append(f"{fld} ({keys[fld]!r}) was never logged at a loss step: not used")
            keys.pop(fld)
    imported = {
        "source": series.source,
        "source_name": title,
        "path": series.path,
        "keys": keys,
        "fields": sorted(keys) + (["max_norm"] if opts.max_norm is not None and "grad_norm" in keys else []),
        "steps": len(steps),
        "first_step": steps[0] if steps else None,
        "last_step": steps[-1] if steps else None,
        "log_interval": interval,
        "step_base": series.step_base,
        "world_size": opts.world_size,
        "micro_batch": opts.micro_batch,
        "accum": opts.accum,
        "tokens_per_sample": opts.tokens_per_sample,
        "global_batch": batch,
        "max_norm": opts.max_norm,
        "problems": list(series.problems),
    }
    return records, imported


def log_run(series: LogSeries, options: ImportOptions, title: str) -> RunData:
    """``series`` as the in-memory run the analysis reads: one rank that stands for the whole job.

    The records go through the run directory's own contract (records.check, records.encode) and
    its own rank-file parser, so an imported log is read exactly like a probed rank file, without
    a temporary run directory.
    """
    records_, imported = build_records(series, options, title)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    header = {
        "kind": "header",
        "schema": RANK_SCHEMA,
        "rank": 0,
        "world_size": 1,  # one stream for the whole job; the job's world size is in `imported`
        "level": "imported",
        "time": time.time(),
    }
    last = max((int(r["step"]) for r in records_), default=0)
    # the parser believes step numbers up to lines × steps_per_line (rankfile.scan._stride)
    header["steps_per_line"] = -(-(last + 1) // (len(records_) + 2))
    lines = [
        header,
        *records_,
        {"kind": "end", "time": time.time(), "steps": len(records_), "reason": "exit"},
    ]
    raw = b"".join(records.encode(records.check(r)) for r in lines)
    probs = Problems()
    data, table = parse_rank_bytes(raw, 0, probs)
    data.steps = to_columns(table, 0, probs)
    manifest = {
        "schema": RUN_SCHEMA,
        "command": None,
        "level": "imported",
        "start": now,
        "end": now,
        "imported": imported,
    }
    return RunData(
        path=Path(series.path),
        manifest=manifest,
        ranks={0: data},
        world_size=1,
        problems=probs.all,
        in_progress=False,
        damage=probs.damage,
        # the log ends where the run's logging ended: nothing says it failed
        exit_status=ExitStatus(code=None, completed=True),
    )
