"""The run-directory contract (docs/run-format.md) in one place: names, schemas, every record kind.

Writers (the probe, the test fixtures, bench/) build records with :func:`record` and serialise them
with :func:`encode`; the reader (ddp_doctor.rundir.reader) checks them with :func:`sanitize` and the Arrow
schema of `step` records comes from :data:`KINDS` too. So a field or a record kind is declared once,
here, with its type:

* add a field: one :class:`Field` line in its kind's table below (the writer may then emit it, the
  reader type-checks it and, for a numeric `step` field, turns it into a column in
  ``StepColumns.extra``); document it in docs/run-format.md and test it;
* add a record kind: one entry in :data:`KINDS` (``RankData.records[kind]`` then holds its records).

Types (the ``type`` of a :class:`Field`): ``int``, ``float`` (a JSON number, or one of the strings
``"nan"``, ``"inf"``, ``"-inf"`` that the writer uses for non-finite floats), ``bool``, ``str``,
``dict`` (an object: its declared sub-fields are checked, others kept), ``any``, and
``list[T]`` of those. ``null`` is accepted for every field (it means "not recorded").

Nothing here imports torch or numpy: the probe imports this module inside training processes.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# --- names and versions -------------------------------------------------------------------------

RUN_SCHEMA = "ddp-doctor.run/1"
RANK_SCHEMA = "ddp-doctor.rank/1"
KNOWN_MAJOR = 1
MANIFEST = "manifest.json"
RANKS_DIR = "ranks"
# Rank files of earlier torchrun attempts (`--max-restarts`): RUN/attempts/<restart>/ranks/; the
# run directory's own ranks/ holds the last attempt's (probe/recorder.py moves them aside).
ATTEMPTS_DIR = "attempts"
TRAINER_DIR = "trainer"
TRAINER_METRICS = "metrics.jsonl"
# Created by `ddp-doctor run` with O_EXCL before anything else is written: one run per directory.
# A later per-node claim (multi-node runs sharing one --out) adds ``.claim.node-<N>`` beside it.
CLAIM = ".ddp-doctor.claim"
CACHE_DIR = ".ddp-doctor-cache"
# Written by `ddp-doctor watch --stop-on` (docs/watch.md) just before it stops the job: who and why.
WATCH_STOP = "watch-stop.json"
RANK_FILE_RE = re.compile(r"rank-([0-9]{1,9})\.jsonl")


def manifest_path(run_dir: Path | str) -> Path:
    return Path(run_dir) / MANIFEST


def rank_file_name(rank: int) -> str:
    return f"rank-{rank:05d}.jsonl"


def rank_file(run_dir: Path | str, rank: int) -> Path:
    return Path(run_dir) / RANKS_DIR / rank_file_name(rank)


def trainer_metrics_path(run_dir: Path | str) -> Path:
    return Path(run_dir) / TRAINER_DIR / TRAINER_METRICS


def rank_of_file_name(name: str) -> int | None:
    """The rank a file name ``rank-N.jsonl`` stands for, or None for any other name."""
    m = RANK_FILE_RE.fullmatch(name)
    return int(m.group(1)) if m else None


def schema_problem(schema: Any, expected: str) -> str | None:
    """None when ``schema`` is ``expected`` (``family/MAJOR``) or a minor of it (``family/MAJOR.N``).

    The one version check of the reader: ``ddp-doctor.run/10`` is another major version, not /1.
    """
    family = expected.rsplit("/", 1)[0]
    if isinstance(schema, str) and re.fullmatch(re.escape(family) + rf"/{KNOWN_MAJOR}(\.[0-9]+)?", schema):
        return None
    shown = schema if isinstance(schema, (str, int, float)) else type(schema).__name__
    return f"unknown schema {str(shown)[:80]!r} (this reader knows {expected}); read as {expected}"


# --- record kinds ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    per: str = (
        "record"  # `step` records: "step" (one value per optimizer step) or "micro" (list per micro-step)
    )
    fields: tuple[Field, ...] = ()  # sub-fields of a dict / list[dict]


def F(name: str, type: str, per: str = "record", *fields: Field) -> Field:  # noqa: N802 - a table constructor
    return Field(name, type, per, tuple(fields))


_CLIP = (
    F("max_norm", "float"),
    F("total_norm", "float"),
    F("after_unscale", "bool"),
    F("scaler", "bool"),
    # FSDP2: a partial DTensor total norm, per rank (docs/run-format.md, "FSDP2 / DTensor")
    F("total_norm_shard", "float"),
    F("norm_type", "float"),
    # clip_grad_value_ (docs/run-format.md, "Clipping by value"); max_norm is null there
    F("clip_value", "float"),
    F("max_abs", "float"),
    F("clipped_norm", "float"),
)
_GROUP = (
    F("lr", "float"),
    F("eps", "float"),
    F("betas", "list[float]"),
    F("weight_decay", "float"),
    F("n_params", "int"),
    F("numel", "int"),
    F("momentum", "float"),
)

# Every record kind of a rank file and its fields. `config` records also carry the fields of their
# `what` (CONFIG_FIELDS). The reader keeps unknown fields of known kinds and counts unknown kinds.
KINDS: dict[str, tuple[Field, ...]] = {
    "header": (
        F("schema", "str"),
        F("rank", "int"),
        F("world_size", "int"),
        F("local_rank", "int"),
        F("local_world_size", "int"),
        F("host", "str"),
        F("pid", "int"),
        F("time", "float"),
        F("level", "str"),
        F("every", "int"),
        F("torch", "str"),
        F("backend", "str"),
        F("device", "str"),
        # several nodes / Slurm tasks (probe/launch_env.py): instance name or node-<node rank>
        F("node", "str"),
        # imported logs (rundir/sources/logs.py): step numbers go up to steps_per_line × lines
        F("steps_per_line", "int"),
        # torchrun's TORCHELASTIC_RESTART_COUNT: which attempt wrote this file (0: the first)
        F("restart", "int"),
    ),
    "config": (F("what", "str"), F("step", "int")),
    "step": (
        F("step", "int", "step"),
        F("time", "float", "step"),
        F("dt", "float", "step"),
        F("micro_steps", "int", "step"),
        F("losses", "list[float]", "micro"),
        F(
            "loss_fn",
            "list[dict]",
            "micro",
            F("value", "float"),
            F("reduction", "str"),
            F("n_valid", "float"),
        ),
        F("samples", "list[float]", "micro"),
        F("tokens", "list[float]", "micro"),
        F("input_hashes", "list[str]", "micro"),
        F("sync", "list[int]", "micro"),
        F("grad_sq_local", "list[float]", "micro"),
        F("grad_sq_global", "list[float]", "micro"),
        F("zero_grad", "int", "step"),
        F("zero_grad_after_backward", "int", "step"),
        F("sched_steps", "int", "step"),
        F("lr", "list[float]", "step"),
        F("skipped", "bool", "step"),
        F("scale", "float", "step"),
        F("found_inf", "bool", "step"),
        F("clip", "list[dict]", "step", *_CLIP),
        F("unscale_calls", "int", "step"),
        F(
            "nonfinite",
            "dict",
            "step",
            F("where", "str"),
            F("micro", "int"),
            F("bucket", "int"),
            F("param", "str"),
        ),
        F("autocast", "str", "step"),
        # DeepSpeed: the engine's global gradient norm (unscaled, before clipping; deepspeed.py)
        F("grad_norm", "float", "step"),
        # DDP: Σ_p w_p ‖grad_p‖ just before optimizer.step(), compared across ranks (instruments/stepgrads.py)
        F("grad_digest", "float", "step"),
        # DDP: Σ_p ⟨grad_p, p⟩ before optimizer.step() and of this rank's local gradient (stepgrads.py)
        F("grad_dot_step", "float", "step"),
        F("grad_dot_local", "float", "step"),
    ),
    "sampler": (
        F("step", "int"),
        F("sampler", "int"),  # which sampler of this rank (0, 1, ... in order of first iteration)
        F("shuffle", "bool"),
        F("epoch", "int"),
        F("n", "int"),
        F("hash", "str"),
        F("head", "list[int]"),
        # that sampler's previous iteration: indices drawn from it, optimizer steps it fed
        F("prev_drawn", "int"),
        F("prev_steps", "int"),
    ),
    # the gradients the optimizer steps on, at due steps (probe/instruments/stepgrads.py)
    "gradsync": (
        F("step", "int"),
        F("sq_step", "float"),
        F("sq_reduced", "float"),  # FSDP2: the same sum when the step's last synced backward returned
        F("norms", "list[float]"),
        F("names", "list[str]"),
        F("shapes", "list[list[int]]"),
    ),
    "replica": (
        F("step", "int"),
        F("total", "str"),
        F("params", "list[int]"),
        F("buffers", "int"),
        F("final", "bool"),  # the final state, written at exit / destroy_process_group
    ),
    # every level: a sampled update/parameter ratio (probe/instruments/update_sample.py)
    "update": (
        F("step", "int"),
        F(
            "tensors",
            "list[dict]",
            "record",
            F("name", "str"),
            F("group", "str"),
            F("type", "str"),
            F("numel", "int"),
            F("sampled", "int"),
            F("param_norm", "float"),
            F("update_norm", "float"),
        ),
    ),
    "full": (F("step", "int"), F("groups", "dict"), F("adam", "list[dict]"), F("sharded", "bool")),
    "compile_check": (
        F("step", "int"),
        F("max_abs", "float"),
        F("max_rel", "float"),
        F("baseline_abs", "float"),
    ),
    "unused": (F("step", "int"), F("names", "list[str]")),
    # opt-in equivalence fingerprints of the first K steps (probe/instruments/fingerprints.py):
    # per parameter [Σx, Σx², Σ|x|, max|x|, 4 samples] or null; `local` one list per micro-step
    "fingerprint": (
        F("step", "int"),
        F("names", "list[str]"),
        F("numel", "list[int]"),
        F("dtype", "list[str]"),
        F("sharded", "bool"),
        F("local", "any"),
        F("reduced", "any"),
        F("clipped", "any"),
        F("param", "any"),
        F("update", "any"),
        F("sample_hashes", "list[str]"),
    ),
    # the loss the script itself logged (probe/capture; docs/run-format.md `logged_loss`)
    "logged_loss": (
        F("step", "int"),
        F("micro", "int"),
        F("source", "str"),
        F("key", "str"),
        F("value", "float"),
        F("resolution", "float"),
        F("rank", "int"),
        F("user_step", "int"),
        F("reduce", "str"),
    ),
    # every R optimizer steps: the window's sufficient statistics (rundir/rollups.py; docs/run-format.md)
    "rollup": (
        F("schema", "str"),
        F("rank", "int"),
        F("every", "int"),
        F("window", "int"),
        F("first", "int"),
        F("last", "int"),
        F("steps", "int"),
        F("stats", "dict"),
        F("spikes", "dict"),
        F("inputs", "list[any]"),
        # [distinct, digest]: the discrete structure of the window's step records (rollups.shape_of)
        F("shape", "list[any]"),
        # only in the rollup index RUN/ranks/rollup-NNNNN.jsonl (rundir/rollup_index.py), never in a
        # rank file: the window's bytes [start, end) in the rank file, and the [start, end) of its
        # lines that are not `step` records (header, config, sampler, ...)
        F("at", "list[int]"),
        F("others", "list[list[int]]"),
        F("screen", "dict"),
    ),
    # first line of a rollup index (rundir/rollup_index.py): which rank file it indexes
    "rollup_index": (
        F("schema", "str"),
        F("rank", "int"),
        F("every", "int"),
        F("ino", "int"),
        F("file", "str"),
    ),
    "probe_error": (F("instrument", "str"), F("step", "int"), F("error", "str"), F("traceback", "str")),
    "end": (
        F("time", "float"),
        F("steps", "int"),
        F("reason", "str"),
        F("interventions", "dict"),
        F("exception", "str"),
    ),
}

# Fields of `config` records by their `what` (docs/run-format.md, table under `config`).
CONFIG_FIELDS: dict[str, tuple[Field, ...]] = {
    "dist": (F("backend", "str"), F("world_size", "int"), F("rank", "int")),
    "ddp": (
        F("module", "str"),
        F("find_unused_parameters", "bool"),
        F("bucket_cap_mb", "float"),
        F("gradient_as_bucket_view", "bool"),
        F("static_graph", "bool"),
        F("broadcast_buffers", "bool"),
        F("n_params", "int"),
        F("n_trainable", "int"),
        F("n_trainable_numel", "int"),
        F("batchnorm", "list[str]"),
        F("syncbatchnorm", "int"),
        # DDP's own mixed precision: {param_dtype, reduce_dtype, buffer_dtype} or null
        F("mixed_precision", "dict"),
    ),
    # a DDP comm hook registered: its name and the dtype it all-reduces in (probe/instruments/ddp.py)
    "ddp_comm_hook": (F("hook", "str"), F("reduce_dtype", "str")),
    # elements per dtype at the first optimizer step (probe/instruments/dtypes.py)
    "dtypes": (
        F("model_params", "dict"),
        F("optimizer_params", "dict"),
        F("grads", "dict"),
        F("buffers", "dict"),
    ),
    "fsdp": (
        F("version", "int"),
        F("n_params", "int"),
        F("reshard_after_forward", "any"),
        F("module", "str"),
        # FSDP1 / HSDP (probe/instruments/fsdp1.py)
        F("sharding_strategy", "str"),
        F("hsdp", "bool"),
        F("shard_group_size", "int"),
        F("replicas", "int"),
        F("shard_rank", "int"),
        F("use_orig_params", "bool"),
        F("cpu_offload", "bool"),
        F("param_dtype", "str"),
        F("reduce_dtype", "str"),
        F("buffer_dtype", "str"),
        F("keep_low_precision_grads", "bool"),
        F("cast_forward_inputs", "bool"),
        # FSDP2 (probe/instruments/fsdp.py): the root's MixedPrecisionPolicy, distinct policies
        F("mp_policy", "dict"),
        F("mp_policies", "int"),
    ),
    "fsdp_clip": (F("function", "str"),),
    # DeepSpeed engine settings (probe/instruments/deepspeed.py)
    "deepspeed": (
        F("version", "str"),
        F("zero_stage", "int"),
        F("gradient_accumulation_steps", "int"),
        F("train_micro_batch_size_per_gpu", "int"),
        F("train_batch_size", "int"),
        F("dp_world_size", "int"),
        F("gradient_clipping", "float"),
        F("fp16", "bool"),
        F("bf16", "bool"),
        F("communication_data_type", "str"),
        F("loss_scale", "float"),
        F("dynamic_loss_scale", "bool"),
        F("initial_loss_scale", "float"),
        F("optimizer", "str"),
        F("basic_optimizer", "str"),
        F("offload_optimizer", "str"),
        F("offload_param", "str"),
        F("module", "str"),
    ),
    "zero": (F("optimizer", "str"),),
    "optimizer": (F("type", "str"), F("groups", "list[dict]", "record", *_GROUP)),
    "scaler": (
        F("init_scale", "float"),
        F("growth_factor", "float"),
        F("backoff_factor", "float"),
        F("growth_interval", "int"),
        F("enabled", "bool"),
    ),
    "autocast": (F("dtype", "str"), F("device_type", "str")),
    "compile": (F("target", "str"), F("order", "str"), F("backend", "str"), F("mode", "str")),
    "scheduler": (F("type", "str"), F("wrapper", "str"), F("split_batches", "bool")),
    "sampler": (
        F("sampler", "int"),
        F("type", "str"),
        F("shuffle", "bool"),
        F("seed", "int"),
        F("drop_last", "bool"),
        F("num_replicas", "int"),
        F("rank", "int"),
        F("dataset_len", "int"),
    ),
    "params": (F("names", "list[str]"),),
    "interventions": (F("applied", "dict"), F("errors", "dict")),
}

MANIFEST_FIELDS: tuple[Field, ...] = (
    F("schema", "str"),
    F("command", "list[str]"),
    F("cwd", "str"),
    F("level", "str"),
    F("every", "int"),
    F("interventions", "dict"),
    F("start", "str"),
    F("end", "str"),
    F("exit_code", "int"),
    F("host", "str"),
    F("versions", "dict"),
    F("env", "dict"),
    F("ranks", "int"),
    F("attached", "bool"),
    # one of several `ddp-doctor run` instances sharing the directory (rundir/manifests.py)
    F("instance", "str"),
    F("instances_expected", "int"),
    F("instances", "dict"),
)


def _names(kind: Any, what: Any) -> set[str] | None:
    fields = KINDS.get(kind) if isinstance(kind, str) else None
    if fields is None or (kind == "config" and what not in CONFIG_FIELDS):
        return None
    return {f.name for f in fields} | ({f.name for f in CONFIG_FIELDS[what]} if kind == "config" else set())


def check(rec: dict[str, Any]) -> dict[str, Any]:
    """``rec`` itself if its kind and every field are declared here, with ``kind`` first (the
    reader's fast path relies on it); else KeyError. The probe's writer calls it on every record,
    so a writer cannot drift from the contract (the instrument that tries is disabled and a
    `probe_error` is written instead)."""
    kind = rec.get("kind")
    names = _names(kind, rec.get("what"))
    if names is None:
        raise KeyError(
            f"undeclared record kind {kind!r}/{rec.get('what')!r} (declare it in ddp_doctor/rundir/records.py)"
        )
    unknown = [k for k in rec if k != "kind" and k not in names]
    if unknown:
        raise KeyError(
            f"record kind {kind!r} declares no field(s) {sorted(unknown)} (ddp_doctor/rundir/records.py)"
        )
    if next(iter(rec)) != "kind":
        rec = {"kind": kind, **{k: v for k, v in rec.items() if k != "kind"}}
    return rec


def record(kind: str, **fields: Any) -> dict[str, Any]:
    """A checked record of ``kind`` (see :func:`check`)."""
    return check({"kind": kind, **fields})


def jsonable(value: Any) -> Any:
    """Replace non-finite floats by the strings "nan"/"inf"/"-inf" (run-format.md, "Rank files")."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def encode(rec: dict[str, Any]) -> bytes:
    """One record as one JSON line (compact separators: the reader's fast path relies on them)."""
    return (json.dumps(jsonable(rec), allow_nan=False, separators=(",", ":")) + "\n").encode()


def line_prefix(kind: str) -> bytes:
    """How every line that :func:`encode` writes for a record of ``kind`` begins."""
    return b'{"kind":' + json.dumps(kind).encode() + b","


# --- type checks (the reader) -------------------------------------------------------------------

_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
INT64_MAX = 2**63 - 1
MAX_DEPTH = 32  # records nested deeper than this are damage, not data (JSON can nest thousands deep)
_MISSING = object()


def _scalar(value: Any, typ: str) -> Any:
    """``value`` as ``typ``, or _MISSING when it is not one."""
    if value is None:
        return None
    if typ == "float":
        if isinstance(value, bool):
            return _MISSING
        if isinstance(value, float):
            return value
        if isinstance(value, int):
            try:
                return float(value)
            except OverflowError:
                return _MISSING
        if isinstance(value, str):
            return _NONFINITE.get(value, _MISSING)
        return _MISSING
    if typ == "int":
        ok = isinstance(value, int) and not isinstance(value, bool) and -INT64_MAX <= value <= INT64_MAX
        return value if ok else _MISSING
    if typ == "bool":
        return value if isinstance(value, bool) else _MISSING
    if typ == "str":
        return value if isinstance(value, str) else _MISSING
    if typ == "dict":
        return value if isinstance(value, dict) else _MISSING
    return value  # "any"


def check_value(value: Any, field: Field, path: str, bad: list[str]) -> Any:
    """``value`` checked against ``field`` (wrong list entries become null); _MISSING if unusable."""
    typ = field.type
    if typ.startswith("list["):
        if value is None:
            return None
        if not isinstance(value, list):
            bad.append(path)
            return _MISSING
        inner = Field(field.name, typ[5:-1], field.per, field.fields)
        items = []
        wrong = False
        for v in value:
            c = check_value(v, inner, path, [])
            if c is _MISSING:
                wrong = True
                c = None
            items.append(c)
        if wrong:
            bad.append(path + "[]")
        return items
    out = _scalar(value, typ)
    if out is _MISSING:
        bad.append(path)
        return out
    if typ == "dict" and out is not None and field.fields:
        out = sanitize_fields(out, field.fields, path, bad)
    return out


def sanitize_fields(
    rec: dict[str, Any], fields: tuple[Field, ...], path: str, bad: list[str]
) -> dict[str, Any]:
    """A copy of ``rec`` whose declared fields have their declared types (others dropped, named in
    ``bad``); undeclared fields are kept as they are."""
    out = dict(rec)
    for f in fields:
        if f.name in out:
            v = check_value(out[f.name], f, f"{path}.{f.name}", bad)
            if v is _MISSING:
                del out[f.name]
            else:
                out[f.name] = v
    return out


def sanitize(rec: dict[str, Any], bad: list[str]) -> dict[str, Any] | None:
    """A record checked against its kind's table; None when it is nested deeper than MAX_DEPTH."""
    if depth_exceeds(rec, MAX_DEPTH):
        bad.append(f"{str(rec.get('kind'))[:40]} (nested deeper than {MAX_DEPTH})")
        return None
    kind = rec.get("kind")
    fields = KINDS.get(kind, ()) if isinstance(kind, str) else ()
    out = sanitize_fields(rec, fields, str(kind)[:40], bad)
    if kind == "config" and isinstance(out.get("what"), str):
        out = sanitize_fields(out, CONFIG_FIELDS.get(out["what"], ()), f"config.{out['what'][:40]}", bad)
    return out


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists/dicts deeper than ``limit`` (iterative: no recursion)."""
    stack = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        if isinstance(v, list):
            if d >= limit:
                return True
            stack.extend((x, d + 1) for x in v if isinstance(x, (list, dict)))
    return False
