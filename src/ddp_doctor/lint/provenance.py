"""Value provenance: which values of a file hold the local training loss.

A value is the local loss when it is the tensor a backward runs on (a *root*), when it is computed
from one (``lossf = loss.item() * accum``), collected from one (``meter.update(loss.item())``,
``stats["loss"] = loss.item()``, ``for k, v in logs.items()``), or returned by code that has one:
a same-file helper (``loss = train_step(batch)``), a closure handed to a higher-order helper that
returns its result (MSN ``(loss, ...), etime = gpu_timer(train_step)``), a project function or
method (project mode: KAIR ``logs = model.current_log()`` returning ``self.log_dict``). The object
a loss is read out of carries it too (YOLOX ``loss = outputs["total_loss"]`` makes ``outputs`` a
loss container). Attributes of ``self`` are values like names: a loss stored on ``self.meter`` in
the training method is the local loss in every method of the class that reads ``self.meter``.

Returned values keep their shape: a helper returning ``losses, report, batch_size, state`` holds the
loss in position 0 only, so ``a, b, n, s = helper()`` taints ``a``, not the batch size (open_clip).
What a value is, is decided by what it holds, plus its name where the name says it holds something
else: accuracies, probabilities, rates, norms, times, validation values are never the loss.
A value combined across ranks on the way (``all_reduce``, ``reduce_dict``, ``all_gather``,
``meter.synchronize_between_processes()``) is not local any more.

Used by rank0-only-loss-log and by project mode (``Summary.returns_loss``); the file is parsed,
never run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from ddp_doctor.lint.context import FileContext, FunctionNode, Scope, dotted, method, parameter_names
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.overrides import abstract, override_defs
from ddp_doctor.lint.rank0 import bound_argument
from ddp_doctor.lint.reductions import (
    combined_itself_before,
    compute_of,
    computed_from_gathered,
    dicts_replaced_by_reduced,
    is_reduce,
    named_only,
    reduced_before,
    reduced_iteration,
    reduces_in_place,
    reducing_call,
    synced_meter,
    synced_metrics_built,
)
from ddp_doctor.lint.single_process import single_process_only

# What a call returns of the loss: True (the whole value) or, for a returned tuple, the shape of each
# position that holds it (``{0: True}`` for ``return losses, report, n``). None: nothing.
Shape = Union[bool, dict[int, "Shape"]]  # noqa: UP007 - a recursive alias needs the string form

TAINT_PASSES = 3  # assignment chains like loss -> lossf -> running_loss
ROUNDS = 5  # helper returning a helper's loss (a chain of four: dialogue-generation), methods reading what another method stored
UPDATE_METHODS = frozenset({"update", "append", "add", "extend", "add_", "__call__"})
# Meter methods that feed a collection of values at once (``metrics.add_dict({"loss": ...})``,
# ``meters.update_dict(...)``); not a logger's ``add_scalar``/``add_text``.
BULK_UPDATE = re.compile(
    r"^(update|add|append|extend)_(dict|dicts|many|all|batch|values|metrics|meters|stats)$"
)


# Classes whose instances keep a running statistic of what they are called with (UNITER's
# ``running_loss = RunningMeter('loss')`` then ``running_loss(loss.item())``), by their name's words.
CALLED_METER = re.compile(r"(Meter|Average|Avg|Running|Smooth|Tracker|Accumulator)", re.IGNORECASE)


def _called_meter(ctx: FileContext, scope: ast.AST, call: ast.Call) -> tuple[str, str] | None:
    """``running_loss(loss.item())`` where every binding of ``running_loss`` in ``scope`` builds a
    meter class (``RunningMeter('loss')``): the call feeds the meter, as ``meter.update(x)`` does."""
    if not isinstance(call.func, ast.Name):
        return None
    bindings = ctx.bindings(scope).get(call.func.id, [])
    if not bindings or not all(
        isinstance(b, ast.Assign)
        and isinstance(b.value, ast.Call)
        and (callee := dotted(b.value.func)) is not None
        and callee.rsplit(".", 1)[-1][:1].isupper()
        and CALLED_METER.search(callee.rsplit(".", 1)[-1])
        for b in bindings
    ):
        return None
    return call.func.id, "__call__"


def is_update_method(name: str) -> bool:
    """A method that feeds a value into the object it is called on (a meter, a list, a dict)."""
    return name in UPDATE_METHODS or bool(BULK_UPDATE.match(name))


# Names that say what they hold, and it is not the training loss: accuracies, probabilities, rates,
# norms, times, validation/evaluation values (``dev_loss``: the NLP name of the validation split), and
# ``_``, the name that discards what it is bound to. ``acc`` is an accuracy unless it is the start of
# ``accum``/``accumulated`` or the name says loss (``accumulated_loss``, ``acc_loss``: a running sum).
# A ``_p`` suffix (``pos_p``) is a probability unless the name says loss (GraphCast's printed running
# mean ``loss_p = accum_loss / n``).
NOT_A_LOSS = re.compile(
    r"^(acc(?!um)(?!\w*loss)\w*|\w*_acc(?!um)(?!\w*loss)\w*|top_?\d\w*|prec\w*|recall\w*|f1\w*|iou\w*|miou\w*|auc\w*|\w*prob\w*|p|"
    r"(?!\w*loss)\w*_p|\w*_score|score\w*|correct\w*|\w*_lr|lr\w*|learning_rate|\w*grad_norm\w*|\w*_norm|"
    r"\w*ratio\w*|time|times|\w*_time|timing\w*|\w*temperature\w*|\w*_temp|(val|valid|dev|eval|test)_\w*|_+|"
    r"\w*_(valid|validation|eval|evaluation)(_\w*)?|\w*_weights?|\w*_factor|factor|\w*logits\w*)$",
    re.IGNORECASE,
)
# Names of a loss call's other outputs that carry loss values (YOLO ``loss_items``, taming
# ``log_dict_ae``, ``stats``); other outputs (``mean_path_length``, ``report``) are something else.
LOSS_CARRIER = re.compile(r"loss|log|stat|metric|item|dict|terms|parts", re.IGNORECASE)
LOSS_KEY = re.compile(r"loss", re.IGNORECASE)  # ``outputs["total_loss"]``, ``out.loss``
# Words that make a loss-named attribute a setting about the loss, not its value.
LOSS_SETTING = re.compile(
    r"(fn|func|function|type|kind|name|mode|cfg|config|kwargs|args|eps|thresh\w*|clip|fp16|dtype|"
    r"every|freq\w*|interval|steps?|iters?|window|path|dir|file)$",
    re.IGNORECASE,
)
# What describes a value without being it: ``len(x)``, ``x.shape``.
DESCRIBE_CALLS = frozenset({"len", "type", "isinstance", "id", "hasattr"})
DESCRIBE_ATTRS = frozenset(
    {"shape", "dtype", "device", "ndim", "dim", "size", "numel", "requires_grad", "is_cuda", "count"}
)
# Methods that pass a tensor through (``loss.mean()``), calls that combine losses (``sum(losses)``).
PASS_THROUGH = frozenset(
    {
        "mean",
        "sum",
        "float",
        "double",
        "half",
        "squeeze",
        "clone",
        "contiguous",
        "to",
        "view",
        "reshape",
        "cuda",
        "cpu",
        "mul",
        "mul_",
        "add",
        "add_",
        "div",
        "div_",
        "sub",
        "abs",
        "item",
        "detach",
        "nansum",
        "nanmean",
        "type",
        "requires_grad_",
        "values",
    }
)
AGGREGATORS = frozenset({"sum", "stack", "cat", "mean", "add", "nansum", "nanmean", "float"})
LOSS_FUNCTION = re.compile(
    r"^torch\.nn\.functional\.(\w*loss\w*|cross_entropy|nll_loss|kl_div|binary_cross_entropy\w*)$"
)
LOSS_CALLEE = re.compile(r"(loss|criterion)", re.IGNORECASE)  # ``criterion(...)``, ``self.val_loss(...)``
# Factors of a product that weigh a loss rather than hold one (``self.D_lossfn_weight * d_loss``).
WEIGHT_NAME = re.compile(
    r"weight|coef|scale|lambda|^lam$|alpha|beta|gamma|factor|mult|^w$|^w_|_w$", re.IGNORECASE
)
# A number of samples or tokens a loss is multiplied by to make a weighted sum (``loss * batch_size``).
COUNT_NAME = re.compile(
    r"^(n|bs|bsz|batch_size|\w*_batch_size|n_?samples|num_samples|n_?tokens|num_tokens|\w*_count|count)$",
    re.IGNORECASE,
)
LIGHTNING_STEP = "training_step"
_COMPREHENSIONS = (ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)
MAX_SCOPE_NODES = 20_000  # generated giants: no provenance (precision over recall)


@dataclass(frozen=True)
class Taint:
    names: set[str]  # names (and ``self.attr``) holding the local training loss
    returns: Shape | None  # what the scope returns of it
    roots: set[str]  # names backward runs on: the loss itself
    updates: dict[str, list[int]]  # object name -> lines of ``obj.update(<value>)``-style calls
    gathered: set[str]  # names assigned from a reduce/gather call (``parts = all_gather(loss)``)
    carriers: set[str] = field(default_factory=set)  # containers a root was read out of
    terms: set[str] = field(default_factory=set)  # the terms a root is summed from
    # carriers whose loss sits in one field (``outputs.loss``): their other fields are not the loss
    fields: frozenset[str] = frozenset()
    params: frozenset[str] = frozenset()  # parameters a caller hands the loss in (``self._log(losses)``)
    # name -> lines where a collective combines it in place (``dist.all_reduce(t)`` as a statement)
    reduced_at: dict[str, list[int]] = field(default_factory=dict)


def merge(a: Shape | None, b: Shape | None) -> Shape | None:
    if a is None or a is False:
        return b
    if b is None or b is False:
        return a
    if a is True or b is True:
        return True
    assert isinstance(a, dict) and isinstance(b, dict)
    out: dict[int, Shape] = dict(a)
    for k, v in b.items():
        out[k] = merge(out.get(k), v) or v
    return out


def reads(
    nodes: list[ast.AST] | Iterator[ast.AST],
    fields: frozenset[str] | set[str] = frozenset(),
    statistics: bool = False,
) -> set[str]:
    """Names read by ``nodes``, with ``self.x`` for attributes of ``self`` (``self.meter.avg`` reads
    ``self.meter``); an item picked by a key that says it is not the loss (``meter["lr"]``,
    ``meter.get_filtered_meter("time")``) reads nothing of its container, and neither does what
    describes a value rather than being it (``len(x)``, ``x.shape``, ``x.device``, ``x.keys()``).

    ``fields``: containers that hold the loss among other things (``outputs`` after ``loss =
    outputs.loss``): reading one of their other fields (``outputs.logits``, ``outputs["acc"]``) is
    not reading the loss; the whole container (``log(outputs)``, ``outputs.items()``) is.

    ``statistics``: also the attributes read of a tracked name, as ``meter.avg`` (of
    ``meter.avg``, ``meter.meters["loss"].avg``, ``m.avg`` of ``for k, m in meter.meters.items()``):
    a statistic a partial sync leaves this rank's own while the meter as a whole is combined
    (provenance ``_taint``, project ``sync_windows``)."""
    out: set[str] = set()
    skip: set[int] = set()
    stats: list[tuple[str, int, str]] = []  # (base, id of its name, attribute)
    held: dict[int, str] = {}  # a comprehension variable's name -> the meter container it walks
    for x in nodes:
        if isinstance(x, _COMPREHENSIONS):
            # a comprehension's own variables are its own scope (``sum(loss for loss in
            # loss_dict_reduced.values())`` reads ``loss_dict_reduced``, not the training ``loss``)
            bound = {n.id for g in x.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
            skip |= {id(n) for n in ast.walk(x) if isinstance(n, ast.Name) and n.id in bound}
            for g in x.generators if statistics else ():
                # ``{k: m.avg for k, m in metric_logger.meters.items()}``: ``m.avg`` is a statistic
                # of the meters ``metric_logger`` holds
                if (walked := _chain_base(g.iter)) is not None:
                    names = {n.id for n in ast.walk(g.target) if isinstance(n, ast.Name)}
                    held |= {
                        id(n): walked[0] for n in ast.walk(x) if isinstance(n, ast.Name) and n.id in names
                    }
        if isinstance(x, ast.Subscript) and (
            _not_a_loss_key(x.slice) or (_names_field(x.value, fields) and _other_key(x.slice))
        ):
            skip |= {id(n) for n in ast.walk(x.value)}
        elif isinstance(x, ast.Call) and (
            isinstance(x.func, ast.Attribute) and len(x.args) == 1 and _not_a_loss_key(x.args[0])
        ):
            skip |= {id(n) for n in ast.walk(x.func.value)}
        elif (
            isinstance(x, ast.Call)
            and isinstance(x.func, ast.Attribute)
            and x.func.attr in ("get", "pop")
            and x.args
            and _names_field(x.func.value, fields)
            and _other_key(x.args[0])
        ):
            skip |= {id(n) for n in ast.walk(x.func.value)}  # info_dict.get("epoch", 0)
        elif isinstance(x, ast.Call) and isinstance(x.func, ast.Name) and x.func.id in DESCRIBE_CALLS:
            skip |= {id(n) for a in x.args for n in ast.walk(a)}  # len(train_dataset)
        elif isinstance(x, ast.Call) and _builds_path(x):
            # ``os.path.join(ckpt_dir, "loss-{:.4f}".format(loss))``: a file name, not the value
            skip |= {id(n) for a in [*x.args, *(k.value for k in x.keywords)] for n in ast.walk(a)}
        elif (
            isinstance(x, ast.Call)
            and isinstance(x.func, ast.Attribute)
            and x.func.attr == "keys"
            and not x.args
        ):
            skip |= {id(n) for n in ast.walk(x.func.value)}  # for key in metrics.keys(): names, not values
        elif isinstance(x, ast.Call) and isinstance(x.func, ast.Attribute):
            skip.add(-id(x.func))  # a method call on a container reads the container
        elif isinstance(x, ast.Attribute) and id(x) not in skip:
            if x.attr in DESCRIBE_ATTRS:
                skip |= {id(n) for n in ast.walk(x.value)}  # loss.shape, x.size()
            elif (
                -id(x) not in skip
                and _names_field(x.value, fields)
                and not loss_key(x.attr)
                and x.attr not in METER_STATISTICS
            ):
                skip |= {id(n) for n in ast.walk(x.value)}  # outputs.logits, args.output_dir
        if id(x) in skip:
            continue
        if type(x) is ast.Name:
            out.add(x.id)
        elif type(x) is ast.Attribute and isinstance(x.value, ast.Name) and x.value.id == "self":
            out.add(f"self.{x.attr}")
        elif statistics and type(x) is ast.Attribute and (walked := _chain_base(x.value)) is not None:
            stats.append((walked[0], walked[1], x.attr))
    for base, root, attr in stats:
        if root in held:
            out.add(f"{held[root]}.{attr}")
        elif root not in skip:
            out.add(f"{base}.{attr}")
    return out


def _chain_base(node: ast.AST) -> tuple[str, int] | None:
    """The tracked name an attribute chain starts from (``metric_logger`` of
    ``metric_logger.meters["loss"]``, ``self.meter`` of ``self.meter.avg``), with the id of its name
    node; None for a chain not rooted in a name."""
    inner: ast.AST | None = None
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        inner = node
        node = node.func if isinstance(node, ast.Call) else node.value
    if not isinstance(node, ast.Name):
        return None
    if node.id != "self":
        return node.id, id(node)
    if isinstance(inner, ast.Attribute) and inner.value is node:
        return f"self.{inner.attr}", id(node)
    return None


def alarm(
    ctx: FileContext, node: ast.AST, values: set[str], fields: frozenset[str] | set[str] = frozenset()
) -> bool:
    """``node`` runs only when one of ``values`` takes some value: under ``if loss > 12:``, ``if
    overflow:`` (``overflow`` computed from the loss), ``if not math.isfinite(loss):``. Such a log is
    an alarm about that value, not the training curve. Rank tests and step counters decide nothing
    here: only the parts of a test (``rank == 0 and loss > 12``) that read ``values``; ``fields``: containers
    whose items other than the loss's are not the loss (CosyVoice ``info_dict["train_engine"] ==
    "torch_ddp"`` tests the configuration, not the loss ``info_dict`` also carries)."""
    child, cur = node, ctx.parents.get(node)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if (
            isinstance(cur, ast.If)
            and child is not cur.test
            and _value_gated(cur.test, values, child in cur.body, fields)
        ):
            return True
        child, cur = cur, ctx.parents.get(cur)
    return False


def _value_gated(
    test: ast.expr, values: set[str], holds: bool, fields: frozenset[str] | set[str] = frozenset()
) -> bool:
    """Whether the branch where ``test`` is ``holds`` runs only for some values of ``values``: ``a
    and loss > 12`` (a conjunct decides), not ``step % 10 == 0 or isnan(loss)`` (the periodic part
    runs whatever the loss)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _value_gated(test.operand, values, not holds, fields)
    if isinstance(test, ast.BoolOp):
        parts = [_value_gated(v, values, holds, fields) for v in test.values]
        conjunction = isinstance(test.op, ast.And) == holds  # the branch needs every part
        return any(parts) if conjunction else all(parts)
    if _existence_test(test) or any(
        isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(test)
    ):
        return False  # whether it exists; a periodic ``step % every == 0``
    return bool(reads(ast.walk(test), fields) & values)


def _existence_test(test: ast.expr) -> bool:
    """``x is not None`` / ``x is None`` (also negated): whether an object exists, not its value."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    return isinstance(test, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in test.ops)


# A meter's statistics of what it was fed (``loss_meter.avg``, ``.val``, ``.global_avg``): a meter
# handed in holding the loss gives the loss through these, not another field.
METER_STATISTICS = frozenset({"avg", "val", "sum", "global_avg", "median", "value", "average", "running_avg"})


def loss_key(name: str) -> bool:
    """An attribute or key that holds a loss value (``loss``, ``total_loss``, ``loss_ce``), not a
    setting about one (``prior_loss_weight``, ``loss_scale``, ``loss_fn``, ``loss_type``)."""
    return bool(LOSS_KEY.search(name)) and not WEIGHT_NAME.search(name) and not LOSS_SETTING.search(name)


def _names_field(node: ast.AST, fields: frozenset[str] | set[str]) -> bool:
    if not fields:
        return False
    if isinstance(node, ast.Name):
        return node.id in fields
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and f"self.{node.attr}" in fields
    )


def _other_key(node: ast.AST) -> bool:
    """A constant key that does not name a loss (``outputs["logits"]``)."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and not loss_key(node.value)


def loop_aliases(ctx: FileContext, node: ast.AST, names: set[str]) -> set[str]:
    """What the loop variables among ``names`` stand for at ``node``: inside ``for k, v in
    logs.items():`` the body's ``v`` holds what ``logs`` holds. Only inside the loop body, so a
    short loop variable (``x``) reused elsewhere in the function is not the loss there."""
    out: set[str] = set()
    picked: list[ast.expr] = []  # tests of the ``if``s whose body holds ``node``
    child, cur = node, ctx.parents.get(node)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(cur, ast.If) and child in cur.body:
            picked.append(cur.test)
        if (
            isinstance(cur, (ast.For, ast.AsyncFor))
            and child in cur.body
            and (items := names & _item_names(cur.target, cur.iter))
            and items - _rebound_in_body(ctx, cur, node)  # (walks the body only for a loop of ``names``)
            and not _other_items_picked(cur.target, picked)
            and not reduced_iteration(cur.iter)
        ):
            out |= reads(ctx.local(_iterated(cur.iter)))
        child, cur = cur, ctx.parents.get(cur)
    return out


def _item_names(target: ast.AST, it: ast.expr) -> set[str]:
    """The loop variables that hold items of what is iterated: not the index ``enumerate`` pairs
    them with (``for i, batch in enumerate(...)``: ``i`` counts), nor the keys of a dict's
    ``items()``/``keys()`` (``for key, value in loss_logger.items(): print(key, gathered[i])``: the
    key is the loss's name, not its value)."""
    if (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "enumerate"
        and it.args
        and isinstance(target, (ast.Tuple, ast.List))
        and len(target.elts) == 2
    ):
        return _item_names(target.elts[1], it.args[0])
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and not it.args:
        if it.func.attr == "keys":
            return set()
        if it.func.attr == "items" and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
            return set(bound_names(target.elts[1]))
    return set(bound_names(target))


def _iterated(it: ast.expr) -> ast.expr:
    """What a loop's items come from: the iterable ``enumerate`` numbers, and the one the
    torchvision-reference ``MetricLogger.log_every(iterable, print_freq, header)`` yields from (DETR,
    DeiT, MAE ... ``enumerate(metric_logger.log_every(data_loader, ...))``): the data, not the
    meters the logger holds."""
    while (
        isinstance(it, ast.Call)
        and it.args
        and (
            (isinstance(it.func, ast.Name) and it.func.id == "enumerate")
            or (isinstance(it.func, ast.Attribute) and it.func.attr == "log_every")
        )
    ):
        it = it.args[0]
    return it


def _rebound_in_body(ctx: FileContext, loop: ast.For | ast.AsyncFor, node: ast.AST) -> set[str]:
    """Loop variables the body rebinds before ``node`` (HALOs ``for k, v in metrics.items(): v =
    self.accelerator.gather(v).flatten(); batch_metrics[k].extend(v...)``): from there the name is
    the new value, which the assignment's own flow follows, not the container's item."""
    line = getattr(node, "lineno", 0)
    return {name for at, names in _body_rebinds(ctx, loop) if at < line for name in names}


def _body_rebinds(ctx: FileContext, loop: ast.For | ast.AsyncFor) -> list[tuple[int, set[str]]]:
    """``(line, names)`` of each assignment of the loop's body that rebinds names to a new value:
    read once per loop (``ctx.memo``), since every statement of a long loop body asks about the loops
    around it (HALOs' trainers spent half their lint time walking the same bodies again)."""
    key = (_body_rebinds, id(loop))
    found: list[tuple[int, set[str]]] | None = ctx.memo.get(key)
    if found is not None:
        return found
    found = []
    for stmt in loop.body:
        for n in ast.walk(stmt):
            if isinstance(n, (ast.Assign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                names = {t.id for t in targets if isinstance(t, ast.Name)}
                if n.value is not None and not any(
                    isinstance(c, ast.Call) and is_reduce(dotted(c.func) or "") for c in ast.walk(n.value)
                ):
                    # ``if hasattr(v, "item"): v = v.item()``: the same value (VAR's TensorboardLogger)
                    names -= reads(ast.walk(n.value))
                found.append((n.lineno, names))
    ctx.memo[key] = found
    return found


def _other_items_picked(target: ast.AST, tests: list[ast.expr]) -> bool:
    """``for k, v in loss_dict.items(): if k in ["discriminator_factor", "d_weight"]: ...v...``: the
    branch holds only the items whose keys say they are not the loss (titok logs those locally and
    gathers the others)."""
    if not (isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name)):
        return False
    key = target.elts[0].id
    for test in tests:
        if not (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.left, ast.Name)
            and test.left.id == key
        ):
            continue
        right = test.comparators[0]
        if isinstance(test.ops[0], ast.Eq):
            keys: list[ast.expr] = [right]
        elif isinstance(test.ops[0], ast.In) and isinstance(right, (ast.List, ast.Tuple, ast.Set)):
            keys = list(right.elts)
        else:
            continue
        if keys and all(_not_a_loss_key(k) for k in keys):
            return True
    return False


def _not_a_loss_key(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(NOT_A_LOSS.match(node.value))
    )


def bound_names(target: ast.AST) -> Iterator[str]:
    """Names a target binds: ``x``, ``a, (b, *c)``, ``self.x``, and the container of ``stats["loss"]
    = ...`` / ``self.log_dict["loss"] = ...`` (it now holds the value) — not ``obj.attr = ...``."""
    if isinstance(target, ast.Name):
        yield target.id
    elif (
        isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
    ):
        yield f"self.{target.attr}"
    elif isinstance(target, ast.Subscript):
        yield from bound_names(target.value)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for e in target.elts:
            yield from bound_names(e)
    elif isinstance(target, ast.Starred):
        yield from bound_names(target.value)


def receiver_name(text: str | None) -> str | None:
    """An update receiver we track: ``meter`` or ``self.meter`` (not ``a.b.c``)."""
    if not text:
        return None
    parts = text.split(".")
    if len(parts) == 1 or (len(parts) == 2 and parts[0] == "self"):
        return text
    return None


def loss_names(ctx: FileContext, root: ast.AST | None) -> set[str]:
    """The names a backward root is made of: operands of sums and products, the receiver of
    ``.mean()``-style calls, the items of ``sum(losses)`` / ``torch.stack(losses)``. Not divisors
    (``loss / accum``), not a product with 0 (``0 * real_pred[0]`` keeps a graph alive), not a weight
    (``self.D_lossfn_weight * d_loss``) nor a count (``loss * batch_size``), not a configuration namespace (``args.r1 / 2 * r1_loss``),
    not what a loss function is called on (``criterion(pred, y)``: the predictions are not the loss),
    not the operands of a power (``(value - returns) ** 2``: a squared error is a new value)."""
    if root is None:
        return set()
    if isinstance(root, ast.Name):
        if root.id == "self":
            return set()
        # an imported module's name, unless the function rebinds it to a value of its own
        # (CLIP-Driven-Universal-Model: ``from utils import loss`` and ``loss = bce + dice`` in ``train``)
        if root.id in ctx.imports and not ctx.bindings(ctx.enclosing_function(root)).get(root.id):
            return set()
        return {root.id}
    if isinstance(root, ast.BinOp):
        if isinstance(root.op, (ast.Div, ast.FloorDiv)):
            return loss_names(ctx, root.left)
        if isinstance(root.op, ast.Pow):
            return set()  # ``(value - returns) ** 2``: a new value, its operands are not the loss
        if isinstance(root.op, ast.Mult):
            if _is_zero(root.left) or _is_zero(root.right):
                return set()
            if (factor := _factor_of_named_loss(root)) is not None:
                return loss_names(ctx, factor)
            # nor a count (``loss * batch_size`` before all-reducing the sum with the count: PAConv)
            # nor a configuration item named for a weight (pi-GAN ``metadata["r1_lambda"] * penalty``,
            # ``opt["lambda_L1"] * l1``): the dict holds settings, not the loss
            return {
                n
                for side in (root.left, root.right)
                if not _weight_item(side)
                for n in loss_names(ctx, side)
                if not _is_weight(n) and not _is_count(n)
            }
        return loss_names(ctx, root.left) | loss_names(ctx, root.right)
    if isinstance(root, ast.UnaryOp):
        return loss_names(ctx, root.operand)
    if isinstance(root, ast.Call):
        return _call_loss_names(ctx, root)
    if isinstance(root, ast.Attribute):
        if isinstance(root.value, ast.Name) and root.value.id == "self":
            return {f"self.{root.attr}"}
        if loss_key(root.attr):  # outputs.loss: the object holds the loss (not args.prior_loss_weight)
            return loss_names(ctx, root.value)
        return set()  # args.r1: a setting
    if isinstance(root, ast.Subscript):
        return loss_names(ctx, root.value)
    if isinstance(root, (ast.Tuple, ast.List)):
        return set().union(*(loss_names(ctx, e) for e in root.elts))
    if isinstance(root, (ast.GeneratorExp, ast.ListComp)):
        return loss_names(ctx, root.elt) | set().union(*(loss_names(ctx, g.iter) for g in root.generators))
    if isinstance(root, ast.IfExp):
        return loss_names(ctx, root.body) | loss_names(ctx, root.orelse)
    return set()


def _reduced_at_read(
    ctx: FileContext,
    binds: list[ast.stmt | ast.expr],
    node: ast.AST,
    reduced_at: dict[str, list[int]],
    scope_binds: dict[str, list[ast.stmt | ast.expr]],
) -> bool:
    """The name ``binds`` are the bindings of holds a combined value where ``node`` reads it: its
    latest binding before ``node`` is a reduce (``reduced_before``), or ``node`` reads it in a loop
    before the loop binds it and so on each pass sees the previous pass's value (``_carried``)."""
    line = getattr(node, "lineno", 0)
    if reduced_before(binds, line, reduced_at, scope_binds):
        return True
    carried = _carried(ctx, binds, node)
    return carried is not None and reduced_before(binds, carried.lineno + 1, reduced_at, scope_binds)


def _carried(ctx: FileContext, binds: list[ast.stmt | ast.expr], node: ast.AST) -> ast.stmt | ast.expr | None:
    """The binding a read of a name at ``node`` sees from the loop's previous pass: ``node`` sits in a
    loop that binds the name only after ``node``, and before the loop the name holds nothing (no
    binding, or ``None``): the loop's last binding (cal-ql's ``while True:`` that logs
    ``metrics.update(train_metrics)`` at the top of each pass and ends the pass with ``train_metrics =
    sync_metrics(train_metrics)``). None otherwise."""
    loop = next((p for p in _ancestors(ctx, node) if isinstance(p, (ast.For, ast.AsyncFor, ast.While))), None)
    if loop is None:
        return None
    line = getattr(node, "lineno", 0)
    inside = [b for b in binds if loop in _ancestors(ctx, b)]
    if not inside or any(b.lineno <= line for b in inside):
        return None
    before = [b for b in binds if b.lineno < loop.lineno]
    if before and not (
        isinstance(before[-1], ast.Assign)
        and isinstance(before[-1].value, ast.Constant)
        and before[-1].value.value is None
    ):
        return None
    return max(inside, key=lambda b: b.lineno)


def _ancestors(ctx: FileContext, node: ast.AST) -> Iterator[ast.AST]:
    cur = ctx.parents.get(node)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        yield cur
        cur = ctx.parents.get(cur)


def _factor_of_named_loss(product: ast.BinOp) -> ast.expr | None:
    """The side of ``a * b`` that holds the loss when one side is a plain name that says it is a
    loss and the other a plain name that does not: the other is its coefficient, whatever it is
    called (NPVAE's ``kl_m * kl_loss``, ``t_m * topo_loss``: the ``_m`` multipliers are annealed
    settings, logged as such). None when the names do not tell."""
    sides = (product.left, product.right)
    named = [isinstance(x, (ast.Name, ast.Attribute)) and loss_key(_last_name(x)) for x in sides]
    plain = [isinstance(x, (ast.Name, ast.Attribute)) for x in sides]
    if all(plain) and named.count(True) == 1:
        return sides[named.index(True)]
    return None


def _last_name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _call_loss_names(ctx: FileContext, call: ast.Call) -> set[str]:
    """``loss.mean()`` / ``loss.float()`` pass their receiver through; ``sum(losses)``,
    ``torch.stack([a, b]).sum()``, ``torch.mean(x)`` their arguments; any other call makes a new
    value (``criterion(pred, y)``) that no name holds yet."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in PASS_THROUGH:
        receiver = func.value
        if not (isinstance(receiver, ast.Name) and receiver.id in ctx.imports):
            return loss_names(ctx, receiver)  # loss.mean(), (a + b).sum()
    if isinstance(func, ast.Attribute) and func.attr == "scale" and len(call.args) == 1:
        return loss_names(ctx, call.args[0])  # ``scaled_loss = self.scaler.scale(loss / accum)``
    if isinstance(func, ast.Attribute) and func.attr == "items" and not call.args:
        return loss_names(ctx, func.value)  # sum(v for k, v in output.items() if "loss" in k)
    if isinstance(func, ast.Name) and func.id in ("list", "tuple") and len(call.args) == 1:
        # ``torch.stack(list(loss_dict.values()))`` (lab4d): a list of the same values
        return loss_names(ctx, call.args[0])
    name = (dotted(func) or "").split(".")[-1]
    if name in AGGREGATORS:
        return set().union(*(loss_names(ctx, a) for a in call.args))
    if call.args and "_" in name and name.rsplit("_", 1)[-1] in AGGREGATORS - {"float", "add"}:
        # a helper named for what it does to its first argument (TabPFN ``torch_nanmean(losses.mean(0))``,
        # ``masked_mean(loss, mask)``): the loss is made of that argument, not of the mask
        return loss_names(ctx, call.args[0])
    return set()


def _is_weight(name: str) -> bool:
    return bool(WEIGHT_NAME.search(name.split(".")[-1]))


def _weight_item(node: ast.AST) -> bool:
    """``cfg["loss_weight"]`` / ``metadata["z_lambda"]``: an item whose constant key names a weight
    (not ``losses["weighted_loss"]``, a loss by its last word)."""
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
        and _is_weight(node.slice.value)
        and not re.search(r"loss(es)?$", node.slice.value, re.IGNORECASE)
    )


def holds_number(
    name: str, binds: dict[str, list[ast.stmt | ast.expr]], seen: set[str] | None = None
) -> bool:
    """Every binding of ``name`` in the scope makes a Python number: ``0``, ``x.item()``,
    ``len(loader)``, ``int(...)``/``float(...)``, and sums, products and quotients of such values
    (``avg_loss = avg_loss / num_steps``). A parameter, an attribute or a tensor op is not one."""
    seen = set() if seen is None else seen
    if name in seen:
        return True  # ``avg_loss += loss.item()``: its own earlier value, already being checked
    seen.add(name)
    found = binds.get(name, [])
    if not found:
        return False
    for b in found:
        if isinstance(b, ast.AugAssign) or (
            isinstance(b, (ast.Assign, ast.AnnAssign))
            and all(isinstance(t, ast.Name) for t in (b.targets if isinstance(b, ast.Assign) else [b.target]))
        ):
            if b.value is None or not _number_expr(b.value, binds, seen):
                return False
        else:
            return False  # a loop target, a tuple unpacked, a ``with ... as``: not known
    return True


def _number_expr(value: ast.expr, binds: dict[str, list[ast.stmt | ast.expr]], seen: set[str]) -> bool:
    if isinstance(value, ast.Constant):
        return isinstance(value.value, (int, float)) and not isinstance(value.value, bool)
    if isinstance(value, ast.Call):
        if isinstance(value.func, ast.Attribute):
            return value.func.attr == "item" and not value.args
        return isinstance(value.func, ast.Name) and value.func.id in ("len", "int", "float")
    if isinstance(value, ast.BinOp):
        return _number_expr(value.left, binds, seen) and _number_expr(value.right, binds, seen)
    if isinstance(value, ast.UnaryOp):
        return _number_expr(value.operand, binds, seen)
    if isinstance(value, ast.Name):
        return holds_number(value.id, binds, seen)
    return False


def _is_count(name: str) -> bool:
    return bool(COUNT_NAME.match(name.split(".")[-1]))


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0 and not isinstance(node.value, bool)


def param_call_return(fn: FunctionNode, nodes: list[ast.AST] | None = None) -> tuple[int, int] | None:
    """``(parameter index, position)`` when ``fn`` calls one of its parameters and returns the result:
    ``def gpu_timer(closure): result = closure(); ...; return result, elapsed`` → ``(0, 0)``;
    position -1 when the result is returned as a whole (``return closure()``)."""
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if not params:
        return None
    body = list(ast.walk(fn)) if nodes is None else nodes
    if not any(isinstance(n, ast.Return) and n.value is not None for n in body):
        return None
    held: dict[str, int] = {}  # name -> parameter whose call result it holds
    for n in body:
        if (
            isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and isinstance(n.value, ast.Call)
            and isinstance(n.value.func, ast.Name)
            and n.value.func.id in params
        ):
            held[n.targets[0].id] = params.index(n.value.func.id)
    found: set[tuple[int, int]] = set()
    for n in body:
        if not isinstance(n, ast.Return) or n.value is None:
            continue
        parts = n.value.elts if isinstance(n.value, ast.Tuple) else [n.value]
        for pos, part in enumerate(parts):
            where = -1 if not isinstance(n.value, ast.Tuple) else pos
            if isinstance(part, ast.Name) and part.id in held:
                found.add((held[part.id], where))
            elif isinstance(part, ast.Call) and isinstance(part.func, ast.Name) and part.func.id in params:
                found.add((params.index(part.func.id), where))
    return found.pop() if len(found) == 1 else None


class LossFlow:
    """Which names of each scope of a file hold the local training loss, and what each function
    returns of it; helpers, closures, methods reading ``self`` attributes another method filled, and
    (project mode) project functions are followed to a fixed point."""

    def __init__(self, ctx: FileContext, facts: LoopFacts) -> None:
        self.ctx = ctx
        self.facts = facts
        self.project: Any = ctx.project
        self.lightning = lightning_steps(ctx)
        # Same-file helpers whose return value a caller backprops (sgm ``loss =
        # self.inner_training_step(...)``; ``self.manual_backward(loss)``): it is their loss too.
        self.backprop_returns: set[int] = set()
        # function id -> positions of its returned tuple that are backpropagated (None: the whole value)
        self.backprop_positions: dict[int, set[int | None]] = {}
        self.returns: dict[int, Shape] = {}  # function id -> what it returns of the loss
        self.class_attrs: dict[int, set[str]] = {}  # class id -> ``self.x`` holding the loss
        # function id -> its parameters that a call in a tainted scope binds to the loss (OpenFold
        # ``self._log(loss_breakdown, ...)`` from ``training_step``)
        self.param_taints: dict[int, set[str]] = {}
        # function id -> its parameters it feeds the loss into (``loss_mts[k].update(loss.item())``
        # in SAM 2's ``_run_step(batch, phase, loss_mts, ...)``): the caller's argument holds it after
        self.fed_params: dict[int, set[str]] = {}
        # calls of project code in other files whose result is backpropagated (project index)
        self.project_backprop_calls: list[ast.Call] = []
        self.taints: dict[int, Taint] = {}  # scope id -> its taint (only scopes that have one)
        self.scopes: dict[int, Scope] = {}
        self._shape_cache: dict[int, Shape | None] = {}
        self._solve()

    # --- the fixed point -------------------------------------------------------------------------

    def _solve(self) -> None:
        ctx = self.ctx
        candidates: dict[int, Scope] = {}
        for n in ctx.of_type(ast.Call):
            if self.facts.backward(n):
                scope = ctx.enclosing_function(n)
                candidates[id(scope)] = scope
        for key, step in self.lightning.items():
            candidates[key] = step
        if self.project is not None:  # defs of this file whose result project code elsewhere backprops
            for fn in self.project.backpropagated_defs(ctx):
                self.backprop_returns.add(id(fn))
                candidates[id(fn)] = fn
            for fn, params in self.project.handed_params(ctx):  # ... or hands the loss to
                self.param_taints.setdefault(id(fn), set()).update(params)
                candidates[id(fn)] = fn
        for _ in range(ROUNDS):
            grew = False  # a helper became a candidate this round: one more round analyses it
            for key, scope in list(candidates.items()):
                if len(ctx.local(scope)) > MAX_SCOPE_NODES:
                    continue
                taint = self._taint(scope)
                for fn, position in self._backprop_helpers(scope, taint.roots | taint.terms):
                    held = self.backprop_positions.setdefault(id(fn), set())
                    if id(fn) not in self.backprop_returns or position not in held:
                        # its return value (that position of it) is the loss backward runs on
                        self.backprop_returns.add(id(fn))
                        held.add(position)
                        candidates[id(fn)] = fn
                        grew = True
                fed = self._fed_params(scope, taint)
                if fed and not fed <= self.fed_params.get(key, set()):
                    self.fed_params[key] = fed  # its callers' arguments hold the loss after the call
                    grew = True
                for fn, params in self._handed(scope, taint):
                    known = self.param_taints.setdefault(id(fn), set())
                    if not params <= known:
                        known |= params
                        candidates[id(fn)] = fn
                        grew = True
                self.scopes[key] = scope
                self.taints[key] = taint
                if taint.returns is not None and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    # a shape that grew (dialogue-generation's ``compute_loss`` found to return ``ppl``
                    # beside the loss) reaches the callers read before it this round in the next one
                    grew |= self.returns.get(key) != taint.returns
                    self.returns[key] = taint.returns
                owner = self._class_of(scope)
                attrs = {n for n in taint.names if n.startswith("self.")}
                if owner is not None and attrs:
                    self.class_attrs.setdefault(id(owner), set()).update(attrs)
            self._shape_cache.clear()
            more = self._reached(candidates)
            if not more and not grew:
                break
            candidates.update(more)
        # final pass so every candidate sees the last round's returns and class attributes
        for key, scope in candidates.items():
            if len(ctx.local(scope)) <= MAX_SCOPE_NODES:
                self.taints[key] = self._taint(scope)
                self.scopes[key] = scope

    def _backprop_helpers(self, scope: Scope, roots: set[str]) -> list[tuple[FunctionNode, int | None]]:
        """Same-file functions whose result a root of ``scope`` is bound to (``loss = self.step(b)``),
        with the position of the returned tuple that holds it (``loss, logs = self.step(b)``: 0; None:
        the whole value); also through the module's own call (``output = self(batch)`` runs
        ``forward``) or an update of a root container (``ret.update(compute_mlm(self, batch))``). Calls
        of project code elsewhere are kept in ``project_backprop_calls`` for the project index."""
        out: list[tuple[FunctionNode, int | None]] = []
        binds = self.ctx.bindings(scope)
        for root in roots:
            values: list[tuple[ast.expr, int | None]] = []
            for b in binds.get(root, []):
                if isinstance(b, ast.Assign) and len(b.targets) == 1:
                    target = b.targets[0]
                    if isinstance(target, ast.Tuple):
                        at = [
                            i for i, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == root
                        ]
                        if at and not any(isinstance(e, ast.Starred) for e in target.elts):
                            values.append((b.value, at[0]))
                    else:
                        values.append((b.value, None))
            values += [
                (a, None)
                for n in self.ctx.local(scope)
                if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "update"
                and dotted(n.func.value) == root
                for a in n.args[:1]
            ]
            for value, position in values:
                if not isinstance(value, ast.Call):
                    continue
                overrides = override_defs(self.ctx, value)
                if overrides:  # each override's return value is the loss there
                    out += [(d, position) for d in overrides if d is not scope]
                    continue
                fn = self.ctx.helper(value) or self._own_forward(scope, value)
                if fn is not None and self._evaluates(fn):
                    # an earlier binding of the carrier's name to an evaluation's results (P5's
                    # ``results = self.evaluate_epoch(epoch=0)`` of a dry run, rebound by every
                    # training step before ``loss = results["loss"]``): backward never runs on it
                    continue
                if fn is not None and fn is not scope:
                    out.append((fn, position))
                elif fn is None:
                    self.project_backprop_calls.append(value)
        return out

    def _fed_params(self, scope: Scope, taint: Taint) -> set[str]:
        """Parameters of ``scope`` (not handed the loss) that it updates with the loss: meters and
        containers of the caller."""
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or not taint.updates:
            return set()
        params = set(parameter_names(scope))
        return (params & set(taint.updates) & taint.names) - taint.params - {"self", "cls"}

    def _unreturned_arguments(self, call: ast.Call, fields: frozenset[str]) -> set[str]:
        """Names the caller hands a same-file helper as the loss, when the helper (read with that
        parameter as the loss) returns nothing of it: CLIP4Clip's ``output_model_file =
        save_model(epoch, args, model, optimizer, tr_loss)`` returns a path, not the loss."""
        fn = self.ctx.helper(call)
        if fn is None or id(fn) not in self.taints or self.returns.get(id(fn)) is not None:
            return set()
        out: set[str] = set()
        for param in self.param_taints.get(id(fn), ()):
            arg = bound_argument(fn, call, param)
            if arg is not None:
                out |= reads(ast.walk(arg), fields)
        return out

    def _fed_arguments(self, call: ast.Call) -> set[str]:
        """Names the caller passes to a same-file helper's fed parameters."""
        fn = self.ctx.helper(call)
        if fn is None or id(fn) not in self.fed_params:
            return set()
        out: set[str] = set()
        for p in self.fed_params[id(fn)]:
            arg = bound_argument(fn, call, p)
            if arg is not None and (name := receiver_name(dotted(arg))):
                out.add(name)
        return out

    def _evaluates(self, fn: Scope) -> bool:
        """``fn`` evaluates (named or decorated for it, ``evaluation_function``) and runs no backward
        itself: what it returns was computed for the logs, never a tensor a caller backprops."""
        return evaluation_function(fn) and not any(
            isinstance(n, ast.Call) and self.facts.backward(n) for n in self.ctx.local(fn)
        )

    def _own_forward(self, scope: Scope, call: ast.Call) -> FunctionNode | None:
        """``self(batch)`` in a method: the class's ``forward`` (``nn.Module.__call__`` runs it)."""
        owner = self._class_of(scope)
        if owner is None or not (isinstance(call.func, ast.Name) and call.func.id == "self"):
            return None
        return next(
            (
                b
                for b in owner.body
                if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) and b.name == "forward"
            ),
            None,
        )

    def _handed(self, scope: Scope, taint: Taint) -> Iterator[tuple[FunctionNode, set[str]]]:
        """Same-file functions ``scope`` calls with the loss as an argument, and the parameters that
        receive it (``self._log(loss_breakdown, batch)`` → ``_log``'s ``loss_breakdown``)."""
        if not taint.names:
            return
        for call in self.ctx.local(scope):
            if not isinstance(call, ast.Call):
                continue
            fn = self.ctx.helper(call)
            if fn is None or fn is scope:
                continue
            params = set()
            for name in parameter_names(fn):
                arg = bound_argument(fn, call, name)
                if arg is not None and reads(ast.walk(arg), taint.fields) & taint.names:
                    params.add(name)
            if params:
                yield fn, params

    def in_lightning_module(self, scope: ast.AST) -> bool:
        """``scope`` is a method of a class whose ``training_step`` Lightning runs."""
        owner = self._class_of(scope)
        return owner is not None and any(self._class_of(step) is owner for step in self.lightning.values())

    def _reached(self, known: dict[int, Scope]) -> dict[int, Scope]:
        """Scopes not yet analysed that receive the loss: they call something returning it, or are
        methods reading a ``self`` attribute that holds it."""
        ctx = self.ctx
        out: dict[int, Scope] = {}
        for scope in ctx.scopes():
            key = id(scope)
            if key in known:
                continue
            owner = self._class_of(scope)
            attrs = self.class_attrs.get(id(owner), set()) if owner is not None else set()
            nodes = ctx.local(scope)
            if attrs and reads(nodes) & attrs:
                out[key] = scope
                continue
            if self._evaluates(scope):
                continue  # validation_step calling the training's shared_step computes a validation loss
            if any(
                isinstance(n, ast.Call) and (self.call_shape(n) is not None or self._fed_arguments(n))
                for n in nodes
            ):
                out[key] = scope
        return out

    def _class_of(self, scope: ast.AST) -> ast.ClassDef | None:
        parent = self.ctx.parents.get(scope)
        return parent if isinstance(parent, ast.ClassDef) else None

    # --- what a call returns of the loss ---------------------------------------------------------

    def call_shape(self, call: ast.Call) -> Shape | None:
        key = id(call)
        if key not in self._shape_cache:
            self._shape_cache[key] = self._call_shape(call)
        return self._shape_cache[key]

    def _call_shape(self, call: ast.Call) -> Shape | None:
        ctx = self.ctx
        overrides = override_defs(ctx, call)
        if overrides and all(id(d) in self.taints for d in overrides):
            # ``self.get_batch_metrics(batch)`` overridden in subclasses: what any override returns
            # (False: each was read and none returns the loss there)
            merged: Shape | None = None
            for d in overrides:
                merged = merge(merged, self.returns.get(id(d)))
            return merged if merged is not None else False
        fn = ctx.helper(call)
        if fn is not None and abstract(fn):
            # ``self.train_actor_critic(...)`` declared here (``pass``), defined by subclasses of
            # other files: what most project methods of that name return
            owner = self._class_of(fn)
            declared = f"{ctx.module}.{owner.name}.{fn.name}" if owner is not None else None
            found = self.project.same_name_returns_loss(call, declared) if self.project is not None else None
            return found
        if fn is not None:
            if id(fn) in self.returns:
                return self.returns[id(fn)]
            hof = param_call_return(fn, ctx.local(fn))
        else:
            hof = None
            if self.project is not None:
                found = self.project.call_returns_loss(ctx, call)
                if found is not None:
                    return found  # type: ignore[no-any-return]  # the project's Shape
                hof = self.project.call_param_return(ctx, call)
        if hof is None:
            return None
        index, position = hof
        arg = call.args[index] if index < len(call.args) else None
        inner = self._function_returns(arg)
        if inner is None:
            return None
        return inner if position < 0 else {position: inner}

    def _function_returns(self, arg: ast.AST | None) -> Shape | None:
        """What a function handed over by name (``gpu_timer(train_step)``) returns of the loss."""
        if not isinstance(arg, ast.Name):
            return None
        defs = self.ctx.functions.get(arg.id, [])
        return self.returns.get(id(defs[0])) if len(defs) == 1 else None

    # --- one scope --------------------------------------------------------------------------------

    def _taint(self, scope: Scope) -> Taint:  # noqa: PLR0915 - one pass over the scope's statements
        ctx, facts = self.ctx, self.facts
        nodes = ctx.local(scope)
        reduced: set[str] = set()
        tainted: set[str] = set()
        synced_metrics: set[str] = set()
        roots: set[str] = set()  # the names backward runs on: their own binding is the forward
        updates: dict[str, list[int]] = {}
        gathered: set[str] = set()
        reduced_at: dict[str, list[int]] = {}
        shapes: dict[str, Shape] = {}  # name -> the tuple shape it holds (``result = helper()``)
        owner = self._class_of(scope)
        if owner is not None:
            tainted |= self.class_attrs.get(id(owner), set())
        params = frozenset(self.param_taints.get(id(scope), ()))
        tainted |= params
        arg_names = (
            set(parameter_names(scope))
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef))
            else set()
        )
        if id(scope) in self.lightning or id(scope) in self.backprop_returns:
            # Lightning runs backward on what training_step returns; a caller on what a helper returns
            positions = self.backprop_positions.get(id(scope), {None})
            for r in nodes:
                if isinstance(r, ast.Return) and r.value is not None:
                    value = _lightning_loss(
                        returned_dict(ctx, scope, r.value) if id(scope) in self.lightning else r.value
                    )
                    if isinstance(value, ast.Tuple) and None not in positions:
                        parts = [value.elts[i] for i in positions if i is not None and i < len(value.elts)]
                        roots |= set().union(*(loss_names(ctx, p) for p in parts))
                    else:
                        roots |= loss_names(ctx, value)
            tainted |= roots
        # Containers a root is read out of (``loss = outputs.loss``) hold the loss in that field only:
        # their other fields (``outputs.logits``) are not the loss.
        fields = frozenset(_carriers(ctx, scope, roots | self._backward_roots(scope)) - roots)
        # a returned dict the caller backprops some items of (ViLT ``ret = {"mlm_loss": ...,
        # "mlm_logits": ...}``): its loss-named items are the loss, its other items are not
        fields |= {r for r in roots if _dict_literal(ctx, scope, r)}
        # a parameter handed the loss may be a container of many things (wenet's ``info_dict``):
        # its loss-named items hold the loss, its other items (``info_dict["tag"]``) do not
        fields |= params
        # a dict literal with a loss-named key (ml-mdm ``other_items = {"batch_num": ..., "loss":
        # loss_val}`` saved with a checkpoint): its other keys (``other_items["batch_num"]``) are not it
        fields |= _loss_keyed_dicts(ctx, nodes)
        all_flows: list[tuple[set[str], set[str]]] = []
        scope_binds = ctx.bindings(scope)
        windows = _partial_syncs(ctx, nodes)
        flows: list[tuple[set[str], set[str]]] = []  # (names read, names written) of non-reducing steps
        # for k, v in d.items(): d[k] = reduce(v): every item of ``d`` is every rank's value
        reduced |= {name for name, _ in dicts_replaced_by_reduced(ctx, nodes)}
        for n in nodes:
            if isinstance(n, ast.Call):
                name = dotted(n.func) or ""
                named_reduce = is_reduce(name)
                if reduces_in_place(ctx, n) and (
                    named_reduce
                    or (
                        ctx.project is not None
                        and isinstance(n.func, ast.Attribute)
                        and ctx.project.method_reduces_receiver(ctx, n)
                    )
                ):
                    # in place (a statement): dist.all_reduce(t), meter.synchronize_between_processes()
                    # (a project method reducing its receiver combines none of its arguments)
                    in_place = {x for a in n.args[:1] for x in reads(ast.walk(a))} if named_reduce else set()
                    # ``for t in [loss, loss_gpt]: dist.all_reduce(t)``: each tensor listed (clip-gen)
                    in_place |= _iterated_elements(ctx, n) if named_reduce else set()
                    # a Python number cannot be changed in place: ``sync_loss(avg_loss, device)``
                    # with ``avg_loss = 0; avg_loss += loss.item()`` reduces a tensor made from it
                    # and leaves ``avg_loss`` this rank's own (DSPv2 drops what it returns)
                    in_place = {x for x in in_place if not holds_number(x, scope_binds)}
                    reduced |= in_place
                    for x in in_place:
                        reduced_at.setdefault(x, []).append(n.lineno)
                    reduced |= _iterated_containers(ctx, n)  # for v in stats.values(): all_reduce(v)
                    if isinstance(n.func, ast.Attribute) and (held := receiver_name(dotted(n.func.value))):
                        # metric_logger.synchronize_between_processes(); ``meters["loss"].all_reduce()``
                        # combines the meter its container holds (the name the update fed, above)
                        held = held.split("[", 1)[0]
                        reduced.add(held)
                        reduced |= _built_from(scope_binds.get(held, []), n.lineno)
                elif (
                    isinstance(n.func, ast.Attribute)
                    and isinstance(n.func.value, ast.Subscript)
                    and (held := receiver_name(dotted(n.func.value.value)))
                    and reduces_in_place(ctx, n)
                    and (
                        is_reduce(n.func.attr)
                        or (ctx.project is not None and ctx.project.method_reduces_receiver(ctx, n))
                    )
                ):
                    # ``for k in meters: meters[k].all_reduce()`` (Dense-Matching): each meter of the
                    # container combines itself, so the container holds global values
                    reduced.add(held)
                    reduced_at.setdefault(held, []).append(n.lineno)
                bw = facts.backward(n)
                if bw is not None and bw.root is not None:
                    names = loss_names(ctx, bw.root)
                    names |= _scaled_from(ctx, scope, names)  # with amp.scale_loss(loss, opt) as scaled_loss
                    tainted |= names
                    roots |= names
                m = method(n) or _called_meter(ctx, scope, n)
                receiver = receiver_name(m[0]) if m else None
                if m and (receiver is None or "[" in receiver) and isinstance(n.func, ast.Attribute):
                    # ``loss_mts[key].update(loss.item())``: a meter of a container, the container holds
                    # it; by a literal key too (PVDM's ``losses['diffusion_loss'].update(loss.item(), 1)``,
                    # logged as ``losses['diffusion_loss'].average``: what is read is the container)
                    inner = n.func.value
                    if isinstance(inner, ast.Subscript):
                        receiver = receiver_name(dotted(inner.value))
                if (
                    m
                    and receiver
                    and is_update_method(m[1])
                    and n.args + n.keywords
                    and not single_process_only(ctx, n)
                    and not synced_meter(ctx, scope, receiver)
                ):
                    # meter.update(loss.item()) / self.meter.update(**outputs): the object holds the loss;
                    # not what it is fed already combined (``metrics.update(dist_mean_dict(to_sync))``)
                    values = [
                        a for a in [*n.args, *(k.value for k in n.keywords)] if not reducing_call(ctx, a)
                    ]
                    read = reads((x for a in values for x in ast.walk(a)), fields)
                    read |= loop_aliases(ctx, n, read)
                    # a name rebound to its combined value before the update (Point-BERT ``loss_1 =
                    # reduce_tensor(loss_1, args)`` then ``losses.update([loss_1.item(), ...])``) feeds
                    # the meter the global value
                    read -= {
                        r
                        for r in read
                        if _reduced_at_read(ctx, scope_binds.get(r, []), n, reduced_at, scope_binds)
                    }
                    flows.append((read, {receiver}))
                    updates.setdefault(receiver, []).append(n.lineno)
                for fed in self._fed_arguments(n):  # self._run_step(batch, phase, loss_mts): fed there
                    if synced_meter(ctx, scope, fed):
                        continue  # a helper appending to metrics that gather themselves (MONAI's)
                    tainted.add(fed)
                    updates.setdefault(fed, []).append(n.lineno)
            elif (
                isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                and n.value is not None
                and not single_process_only(ctx, n)
            ):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                written = {x for t in targets for x in bound_names(t)}
                for t in targets:
                    # ``log[key] = old + new_value`` into a container the caller hands in (parti's
                    # ``accum_log(logs, {"loss": loss.item()})``): the helper feeds the caller's dict
                    if (
                        isinstance(t, ast.Subscript)
                        and isinstance(t.value, ast.Name)
                        and t.value.id in arg_names
                    ):
                        updates.setdefault(t.value.id, []).append(n.lineno)
                value_nodes = ctx.local(n.value)
                read = reads(value_nodes, fields, statistics=bool(windows))
                read |= loop_aliases(ctx, n, read)
                # a name rebound to its combined value before this line (``logps = all_gather(logps)``
                # then ``metrics["logps"] = logps.tolist()``) hands on the global value, not the local
                combined = {
                    r
                    for r in read
                    if _reduced_at_read(ctx, scope_binds.get(r, []), n, reduced_at, scope_binds)
                }
                if isinstance(n.value, ast.Call):  # a meter handed in to be fed is not in the result
                    read -= self._fed_arguments(n.value)
                    read -= self._unreturned_arguments(n.value, fields)
                shape = self._value_shape(n.value, shapes) if isinstance(n, ast.Assign) else None
                if shape is None and self.sums_returned_loss(n.value):
                    shape = True  # ``total += self.training_step(batch)`` returning ``loss.item()``
                positional = False
                if shape is not None:
                    for t in targets:
                        tainted |= _assign(t, shape, shapes)
                    positional = any(isinstance(t, (ast.Tuple, ast.List)) for t in targets)
                if isinstance(n.value, ast.Call) and facts.backward(n.value) is not None:
                    continue  # ``grad_norm, scale = opt.backward_clip_step(loss)``: not the loss
                if synced_metrics_built(ctx, n.value):
                    synced_metrics |= written
                if (
                    isinstance(n.value, ast.Call)
                    and shape is None
                    and any(isinstance(t, ast.Tuple) for t in targets)
                ):
                    # loss, loss_items = criterion(...): the other outputs that say they hold loss
                    # values share the loss's fate (not ``mean_path_length`` or ``report``), unless the
                    # model combined them across ranks before returning them (mmcv's ``parse_losses``)
                    combined_outputs = self._combined_outputs(n.value, targets)
                    flows.append(
                        (
                            written,
                            {w for w in written - combined_outputs if LOSS_CARRIER.search(w.split(".")[-1])},
                        )
                    )
                if any(type(x) is ast.Call and reducing_call(ctx, x) for x in value_nodes):
                    gathered |= written
                all_flows.append((read, written))
                if positional:
                    continue  # the helper's shape says which targets hold the loss
                # a helper that returns what it combined (nanoVLM ``dist_mean_scalar(x)``: all_reduce
                # in place, ``return t.item()``) hands on the global value as a reduce call does
                if not any(
                    type(x) is ast.Call and (reducing_call(ctx, x) or compute_of(x) in synced_metrics)
                    for x in value_nodes
                ):
                    flows.append((read - combined, written))
        for read, written in list(flows):
            for held in written & windows.keys():
                # ``metric_logger.update(loss=loss)`` then ``metric_logger.synchronize_between_processes()``
                # that combines the count and the total only: its window statistics
                # (``metric_logger.meters["loss"].avg``) still hold this rank's values
                flows.append((read, {f"{held}.{w}" for w in windows[held]}))
                for w in windows[held]:
                    updates[f"{held}.{w}"] = sorted(set(updates.get(held, [])))
        reduced |= {r for r in roots if self._reduced_root(scope, r)}
        carriers = _carriers(ctx, scope, roots)
        terms = _terms(ctx, scope, roots) - roots
        # a term computed from all-gathered tensors only is every rank's value, as its root is
        reduced |= {t for t in terms if self._reduced_root(scope, t)}
        recomputed = _recomputed(ctx, scope, roots, all_flows)
        tainted |= carriers | terms | recomputed
        # a value that reads a meter's local window (``payload = {"loss": loss, "loss_avg":
        # metric_logger.meters["loss"].avg}`` beside the all-reduced ``loss``) is not every rank's
        local = {f"{m}.{w}" for m, ws in windows.items() for w in ws}
        for _ in range(TAINT_PASSES if gathered else 0):
            for read, written in all_flows:
                if read & gathered and not read & local:
                    gathered |= written
        tainted -= reduced
        tainted = {t for t in tainted if t in roots or not _not_a_loss(t)}
        if tainted:
            flows = [(read, written - synced_metrics) for read, written in flows]
            for _ in range(TAINT_PASSES):
                for read, written in flows:
                    if read & tainted:
                        tainted |= {w for w in written - reduced if not _not_a_loss(w)}
        returns: Shape | None = None
        binds = ctx.bindings(scope)
        for r in nodes:
            # ``if not is_dist(): return float(x)``: what a single process returns is the global value
            if (
                isinstance(r, ast.Return)
                and r.value is not None
                and not single_process_only(ctx, r)
                # ``return sync_loss_acc(loss_sum, correct, total)``: a helper that all-reduces what it
                # is handed and returns the global values
                and not (type(r.value) is ast.Call and reducing_call(ctx, r.value))
            ):
                # ``loss_avg = reduce_tensor(...)`` (when distributed) just before ``return loss_avg``:
                # what is returned is the global value
                live = {
                    t
                    for t in tainted
                    if not reduced_before(binds.get(t, []), r.lineno, reduced_at, binds)
                    and not _rebuilt_from_reduced(t, r.lineno, tainted, binds, reduced_at)
                }
                returns = merge(returns, _expr_shape(r.value, live, shapes, fields))
        dicts = {r for r in roots | params if r in fields}
        return Taint(
            tainted,
            returns,
            roots,
            updates,
            gathered,
            carriers,
            terms | recomputed,
            (fields - roots) | dicts,
            params,
            reduced_at,
        )

    def _combined_outputs(self, call: ast.Call, targets: Sequence[ast.expr]) -> set[str]:
        """The names of ``loss, log_vars = model(batch)`` bound to items the model's ``forward``
        combines across ranks before it returns them (project mode: ``IndexQueries.
        module_call_reduced_positions``)."""
        if self.project is None or not isinstance(call.func, ast.Name):
            return set()
        positions = self.project.module_call_reduced_positions(self.ctx, call)
        return {
            e.id
            for t in targets
            if isinstance(t, ast.Tuple)
            for i, e in enumerate(t.elts)
            if i in positions and isinstance(e, ast.Name)
        }

    def _backward_roots(self, scope: Scope) -> set[str]:
        """The names the scope's backward calls run on (a first look, before the flows)."""
        out: set[str] = set()
        for n in self.ctx.local(scope):
            if isinstance(n, ast.Call):
                bw = self.facts.backward(n)
                if bw is not None and bw.root is not None:
                    out |= loss_names(self.ctx, bw.root)
        return out

    def _reduced_root(self, scope: ast.AST, root: str) -> bool:
        """Every value the root is assigned is already combined across ranks: a reduce call, or a
        same-file helper returning one (I-JEPA ``loss = loss_fn(z, h)`` where ``loss_fn`` returns
        ``AllReduce.apply(loss)``)."""
        ctx = self.ctx
        binds = ctx.bindings(scope).get(root, [])
        if not binds or not all(isinstance(b, ast.Assign) for b in binds):
            return False
        return all(
            self._reduced_value(b.value) or computed_from_gathered(ctx, scope, b.value, b.lineno)
            for b in binds
            if isinstance(b, ast.Assign)
        )

    def _reduced_value(self, value: ast.expr) -> bool:
        if not isinstance(value, ast.Call):
            return False
        if is_reduce(dotted(value.func) or ""):
            return not named_only(self.ctx, value)
        fn = self.ctx.helper(value)
        if fn is None:
            return False
        binds = self.ctx.bindings(fn)
        nodes = self.ctx.local(fn)
        returns = [r for r in nodes if isinstance(r, ast.Return)]
        # a tensor a collective combined in place first (melodyt5's ``process_one_batch``:
        # ``dist.reduce(loss, dst=0); loss = loss / world_size; dist.broadcast(loss, src=0); return loss``)
        return bool(returns) and all(
            isinstance(r.value, ast.Name)
            and (
                reduced_before(binds.get(r.value.id, []), r.lineno)
                or combined_itself_before(self.ctx, nodes, r.value.id, r.lineno)
            )
            or (isinstance(r.value, ast.Call) and is_reduce(dotted(r.value.func) or ""))
            for r in returns
        )

    def sums_returned_loss(self, value: ast.expr) -> bool:
        """``value`` is arithmetic on the whole loss a call returns (``self.step(batch)``,
        ``train_step(b) * n``): what the call returns is not read out of a tuple."""
        if isinstance(value, ast.BinOp):
            return self.sums_returned_loss(value.left) or self.sums_returned_loss(value.right)
        if isinstance(value, ast.UnaryOp):
            return self.sums_returned_loss(value.operand)
        return (
            isinstance(value, ast.Call)
            and not reducing_call(self.ctx, value)  # ``reduce_tensor(loss) / world_size``: combined
            and self.call_shape(value) is True
        )

    def _value_shape(self, value: ast.expr, shapes: dict[str, Shape]) -> Shape | None:
        if isinstance(value, ast.Call):
            return self.call_shape(value)
        if isinstance(value, ast.Name):
            return shapes.get(value.id)
        return None


def _not_a_loss(name: str) -> bool:
    return bool(NOT_A_LOSS.match(name.split(".")[-1]))


def _assign(target: ast.AST, shape: Shape, shapes: dict[str, Shape]) -> set[str]:
    """Names of ``target`` that receive the loss from a value of ``shape``."""
    if shape is True:
        return set(bound_names(target))
    if not isinstance(shape, dict):
        return set()
    if isinstance(target, (ast.Tuple, ast.List)):
        if any(isinstance(e, ast.Starred) for e in target.elts):
            return set(bound_names(target))  # positions unknown past a star: all of them
        out: set[str] = set()
        for i, sub in shape.items():
            if 0 <= i < len(target.elts):
                out |= _assign(target.elts[i], sub, shapes)
        return out
    names = set(bound_names(target))
    for n in names:
        shapes[n] = shape
    return names


def _partial_syncs(ctx: FileContext, nodes: list[ast.AST]) -> dict[str, frozenset[str]]:
    """Meters a sync of ``nodes`` combines only in part (project mode): receiver -> the statistics
    still local after it (``metric_logger.synchronize_between_processes()`` of a ``MetricLogger`` of
    ``SmoothedValue`` meters: ``avg``, ``median``, ``max``, ``value``, ``latest_meter``)."""
    out: dict[str, frozenset[str]] = {}
    if ctx.project is None:
        return out
    for n in nodes:
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and is_reduce(n.func.attr)
            and reduces_in_place(ctx, n)
            and (held := receiver_name(dotted(n.func.value)))
            and (local := ctx.project.sync_windows(ctx, n))
        ):
            out[held] = out.get(held, frozenset()) | local
    return out


def _built_from(binds: list[ast.stmt | ast.expr], line: int) -> set[str]:
    """The names an object was built from by its latest binding before ``line``, when that is a
    constructor call: omnivore's ``progress = ProgressMeter(n, [*loss_mts.values(), ...])`` then
    ``progress.synchronize()`` all-reduces the meters it holds, so ``loss_mts`` is combined too."""
    before = [b for b in binds if b.lineno < line]
    if not before or not isinstance(before[-1], ast.Assign) or not isinstance(before[-1].value, ast.Call):
        return set()
    call = before[-1].value
    name = (dotted(call.func) or "").rsplit(".", 1)[-1]
    if not name[:1].isupper():
        return set()  # a function's result, not an object holding what it was given
    return reads(x for a in [*call.args, *(k.value for k in call.keywords)] for x in ast.walk(a))


def _expr_shape(
    value: ast.expr, tainted: set[str], shapes: dict[str, Shape], fields: frozenset[str] = frozenset()
) -> Shape | None:
    if isinstance(value, ast.Tuple):
        out: dict[int, Shape] = {}
        for i, e in enumerate(value.elts):
            s = _expr_shape(e, tainted, shapes, fields)
            if s is not None:
                out[i] = s
        return out or None
    if isinstance(value, ast.Name) and value.id in shapes and value.id in tainted:
        return shapes[value.id]
    return True if reads(ast.walk(value), fields) & tainted else None


# Methods of a value read out of a container that keep it the same value (``outputs["loss"].mean()``).
VALUE_METHODS = frozenset(
    {
        "mean",
        "sum",
        "item",
        "float",
        "double",
        "half",
        "bfloat16",
        "detach",
        "clone",
        "to",
        "cuda",
        "cpu",
        "squeeze",
        "unsqueeze",
        "view",
        "reshape",
        "contiguous",
        "flatten",
        "abs",
        "type",
    }
)


def _builds_path(call: ast.Call) -> bool:
    """``os.path.join(...)``, ``osp.join(...)``, ``Path(...)``, ``p.joinpath(...)``."""
    name = dotted(call.func) or ""
    return name.endswith(("path.join", "osp.join")) or name.split(".")[-1] in ("Path", "PurePath", "joinpath")


def _carriers(ctx: FileContext, scope: ast.AST, roots: set[str]) -> set[str]:
    """Containers a root was read out of: ``loss = outputs["total_loss"]`` (YOLOX), ``loss =
    out.loss.mean()``: the container holds the loss too (logged as a whole, or fed to a meter)."""
    out: set[str] = set()
    binds = ctx.bindings(scope)
    for root in roots:
        for b in binds.get(root, []):
            if not isinstance(b, ast.Assign) or len(b.targets) != 1 or not isinstance(b.targets[0], ast.Name):
                continue
            value: ast.AST = b.value
            while (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr in VALUE_METHODS
            ):
                value = value.func.value  # outputs["loss"].mean()
            # (not ``self.loss_computer.compute(...)``: a loss *function* object's call is no read
            # out of ``self``; XMem)
            key: str | None = None
            if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant):
                key = value.slice.value if isinstance(value.slice.value, str) else None
            elif isinstance(value, ast.Attribute):
                key = value.attr
            base = value.value if isinstance(value, (ast.Subscript, ast.Attribute)) else None
            name = receiver_name(dotted(base)) if base is not None else None
            if key and loss_key(key) and name and name not in ctx.imports:
                out.add(name)
    return out


def _terms(ctx: FileContext, scope: ast.AST, roots: set[str]) -> set[str]:
    """The terms a root is summed from (``loss_G_total += D_loss``, ``loss = ce + kl``): each is a
    local loss too. Two levels (a total of totals)."""
    binds = ctx.bindings(scope)
    out: set[str] = set()
    frontier = set(roots)
    for _ in range(2):
        found: set[str] = set()
        for root in frontier:
            for b in binds.get(root, []):
                if (
                    isinstance(b, ast.Assign)
                    and len(b.targets) == 1
                    and isinstance(b.targets[0], ast.Name)
                    or isinstance(b, ast.AugAssign)
                    and isinstance(b.op, (ast.Add, ast.Sub))
                ):
                    found |= loss_names(ctx, b.value)
                elif (
                    isinstance(b, ast.Assign)
                    and len(b.targets) == 1
                    and isinstance(b.targets[0], ast.Tuple)
                    and isinstance(b.value, ast.Call)
                ):
                    # ``loss, nan_share = torch_nanmean(losses.mean(0), return_nanshare=True)``
                    found |= _call_loss_names(ctx, b.value)
        frontier = found - out - roots
        out |= found
    return {n for n in out if not _not_a_loss(n)}


def is_loss_call(ctx: FileContext, call: ast.Call) -> bool:
    """A loss function or criterion: ``F.cross_entropy``, ``criterion(...)``, ``self.train_loss(...)``."""
    if LOSS_FUNCTION.match(ctx.call_qualname(call) or ""):
        return True
    name = (dotted(call.func) or "").split(".")[-1]
    return bool(LOSS_CALLEE.search(name)) and name not in ctx.imports


def _innermost(value: ast.AST) -> ast.AST:
    """``self.train_loss(x, y).view(B, -1)`` → the loss call; ``loss.mul(lw).sum().mean()`` → ``loss``."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in PASS_THROUGH
    ):
        value = value.func.value
    return value


def _recomputed(
    ctx: FileContext, scope: ast.AST, roots: set[str], flows: list[tuple[set[str], set[str]]]
) -> set[str]:
    """Losses recomputed from the training forward's outputs (VAR: ``loss = self.train_loss(logits,
    gt)`` is backpropagated, then ``ce = self.val_loss(logits[:, bg:ed], ...)`` per resolution on the
    same training batch): a loss function applied to what the backpropagated loss was computed from
    is a local training loss too."""
    binds = ctx.bindings(scope)
    outputs: set[str] = set()
    for root in roots:
        for b in binds.get(root, []):
            value = _innermost(b.value) if isinstance(b, ast.Assign) else None
            if isinstance(value, ast.Call) and value.args and is_loss_call(ctx, value):
                prediction = _innermost(value.args[0])
                while isinstance(prediction, (ast.Attribute, ast.Subscript)):
                    prediction = prediction.value  # logits.data[:, a:b]
                if isinstance(prediction, ast.Name):  # a named forward output, not ``model(x)``
                    outputs.add(prediction.id)
    outputs -= roots | {"self"}
    if not outputs:
        return set()
    for _ in range(TAINT_PASSES):  # what is derived from the forward's outputs (``pred = logits[:, a:b]``)
        for read, written in flows:
            if read & outputs:
                outputs |= written - roots
    out: set[str] = set()
    for n in ctx.local(scope):
        if not isinstance(n, ast.Assign) or not isinstance(n.value, ast.Call):
            continue
        written = {t for target in n.targets for t in bound_names(target)}
        if written & roots:
            continue  # the backpropagated loss's own computation
        call = _innermost(n.value)
        if (
            isinstance(call, ast.Call)
            and call.args
            and is_loss_call(ctx, call)
            and reads(ast.walk(call.args[0])) & outputs
        ):
            out |= written
    return out


# Functions that evaluate: Lightning's validation/test/predict hooks, ``evaluate``, ``val_step`` ...
# (by their first word: ``train_and_eval`` trains)
EVAL_FUNCTION = re.compile(
    r"^(on_)?(validation|validate|val|valid|test|predict|eval|evaluate|evaluation)(_|$)",
    re.IGNORECASE,
)


def evaluation_function(scope: ast.AST) -> bool:
    """A function that evaluates rather than trains: named for it (``validation_step``, ``evaluate``)
    or decorated ``@torch.no_grad()`` / ``@torch.inference_mode()``."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if EVAL_FUNCTION.search(scope.name):
        return True
    return any(names_no_grad(d) for d in scope.decorator_list)


def names_no_grad(expr: ast.expr) -> bool:
    """``torch.no_grad`` / ``torch.inference_mode``, called or not (a decorator, a ``with`` item)."""
    return (dotted(expr.func if isinstance(expr, ast.Call) else expr) or "").split(".")[-1] in (
        "no_grad",
        "inference_mode",
    )


def runs_without_grad(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` runs under ``with torch.no_grad():`` / ``inference_mode()`` or in a function decorated
    with one of them (the nearest enclosing function decides)."""
    cur = ctx.parents.get(node)
    while cur is not None:
        if isinstance(cur, (ast.With, ast.AsyncWith)) and any(
            names_no_grad(i.context_expr) for i in cur.items
        ):
            return True
        if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return any(names_no_grad(d) for d in cur.decorator_list)
        cur = ctx.parents.get(cur)
    return False


def _rebuilt_from_reduced(
    name: str,
    line: int,
    tainted: set[str],
    binds: dict[str, list[ast.stmt | ast.expr]],
    reduced_at: dict[str, list[int]],
) -> bool:
    """The latest whole binding of ``name`` before ``line`` computes it from loss values that were
    all combined across ranks just before (AllenNLP's epoch end: ``train_loss =
    dist_reduce_sum(train_loss)``, then ``metrics = get_metrics(model, train_loss, ...)``), and no
    item stored in it since reads the loss (``metrics["gpu_0_memory_MB"] = ...``): what is
    returned is the global value, though the per-batch ``metrics`` of the same name was local."""
    before = [b for b in binds.get(name, []) if b.lineno < line]
    whole = [
        i
        for i, b in enumerate(before)
        if isinstance(b, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in b.targets)
    ]
    if not whole:
        return False
    last = before[whole[-1]]
    assert isinstance(last, ast.Assign)
    for later in before[whole[-1] + 1 :]:
        value = getattr(later, "value", None)
        if value is None or reads(ast.walk(value)) & tainted:
            return False  # ``metrics["loss"] = loss.item()``: an item holds the local loss again
    # the scope's own loss values decide; state it only reads (``self.model``, which the flow marks
    # as holding what its forward returns) is no value of this epoch
    used = {u for u in reads(ast.walk(last.value)) & tainted if u in binds}
    return bool(used) and all(reduced_before(binds.get(u, []), last.lineno, reduced_at, binds) for u in used)


def _dict_literal(ctx: FileContext, scope: ast.AST, name: str) -> bool:
    """Every binding of ``name`` in ``scope`` is a dict built in place (``{...}``, ``dict()``)."""
    binds = ctx.bindings(scope).get(name, [])
    return bool(binds) and all(
        isinstance(b, ast.Assign)
        and (
            isinstance(b.value, ast.Dict)
            or (isinstance(b.value, ast.Call) and dotted(b.value.func) in ("dict", "OrderedDict"))
        )
        for b in binds
    )


def _loss_keyed_dicts(ctx: FileContext, nodes: list[ast.AST]) -> set[str]:
    """Names the scope binds to a dict literal whose keys are all strings, one of them naming a
    loss (``{"loss": loss_val, "batch_num": batch_num}``): the loss sits under that key."""
    out: set[str] = set()
    for n in nodes:
        if (
            isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Dict)
            and n.value.keys
            and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in n.value.keys)
            and any(isinstance(k, ast.Constant) and loss_key(str(k.value)) for k in n.value.keys)
        ):
            out |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    return out


def returned_dict(ctx: FileContext, scope: ast.AST, value: ast.expr) -> ast.expr:
    """The dict literal a ``training_step`` returns, through ``OrderedDict({...})`` / ``dict({...})``
    and a name bound once to one (Lightning 0.x ``output = OrderedDict({"loss": loss, "log":
    tb_dict})`` ... ``return output``); else the value itself."""
    if isinstance(value, ast.Name):
        binds = ctx.bindings(scope).get(value.id, [])
        if len(binds) == 1 and isinstance(binds[0], ast.Assign) and len(binds[0].targets) == 1:
            bound = _dict_of(binds[0].value)
            return bound if bound is not None and _has_key(bound, "loss") else value
    return _dict_of(value) or value


def _has_key(node: ast.Dict, key: str) -> bool:
    return any(isinstance(k, ast.Constant) and k.value == key for k in node.keys)


def _dict_of(value: ast.expr) -> ast.Dict | None:
    """``{...}``, ``OrderedDict({...})``, ``dict({...})``: the dict literal."""
    if isinstance(value, ast.Dict):
        return value
    if (
        isinstance(value, ast.Call)
        and (dotted(value.func) or "").split(".")[-1] in ("dict", "OrderedDict")
        and len(value.args) == 1
        and isinstance(value.args[0], ast.Dict)
        and not value.keywords
    ):
        return value.args[0]
    return None


def _lightning_loss(value: ast.expr) -> ast.expr:
    """The loss of what ``training_step`` returns: the value, or the ``"loss"`` entry of a dict."""
    if isinstance(value, ast.Dict):
        return next(
            (
                v
                for k, v in zip(value.keys, value.values)
                if isinstance(k, ast.Constant) and k.value == "loss"
            ),
            ast.Constant(None),
        )
    return value


def lightning_steps(ctx: FileContext) -> dict[int, FunctionNode]:
    """Lightning ``training_step`` methods (of a class with a base): Lightning runs backward on
    what they return."""
    if LIGHTNING_STEP not in ctx.functions:
        return {}
    out: dict[int, FunctionNode] = {}
    for fn in ctx.functions.get(LIGHTNING_STEP, []):
        owner = ctx.parents.get(fn)
        if isinstance(owner, ast.ClassDef) and owner.bases:
            out[id(fn)] = fn
    return out


def _iterated_containers(ctx: FileContext, call: ast.Call) -> set[str]:
    """``for v in stats.values(): dist.all_reduce(v)``: reducing the loop variable reduces ``stats``;
    also the value of ``for k, v in stats.items()`` and each container of a concatenation
    (SplatFormer ``for key, value in list(loss_dict.items()) + list(metric_dict.items()):``)."""
    loop = _loop_binding_argument(ctx, call, _loop_value)
    if loop is None:
        return set()
    return {r for part in _concatenated(loop.iter) if (r := receiver_name(dotted(_container(part))))}


def _iterated_elements(ctx: FileContext, call: ast.Call) -> set[str]:
    """``for t in [loss, loss_gpt, loss_clip]: dist.all_reduce(t)``: the names a loop over a literal
    list or tuple binds the reduced variable to in turn (each tensor is combined in place)."""
    loop = _loop_binding_argument(ctx, call, lambda t: t.id if isinstance(t, ast.Name) else None)
    if loop is None or not isinstance(loop.iter, (ast.List, ast.Tuple)):
        return set()
    return {d for e in loop.iter.elts if (d := dotted(e)) is not None}


def _loop_binding_argument(
    ctx: FileContext, call: ast.Call, bound: Callable[[ast.expr], str | None]
) -> ast.For | None:
    """The innermost ``for`` of ``call``'s function whose target (read by ``bound``) is the name
    ``call`` is handed first (``dist.all_reduce(v)`` inside ``for k, v in stats.items():``)."""
    arg = call.args[0] if call.args else None
    return _loop_binding(ctx, call, arg.id, bound) if isinstance(arg, ast.Name) else None


def _loop_binding(
    ctx: FileContext, node: ast.AST, name: str, bound: Callable[[ast.expr], str | None]
) -> ast.For | None:
    """The innermost ``for`` of ``node``'s function around it whose target (read by ``bound``) is
    ``name``."""
    cur = ctx.parents.get(node)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(cur, ast.For) and bound(cur.target) == name:
            return cur
        cur = ctx.parents.get(cur)
    return None


def _loop_value(target: ast.expr) -> str | None:
    """The name a loop binds each value to: ``v`` of ``for v in ...`` and of ``for k, v in ...``."""
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[1], ast.Name):
        return target.elts[1].id
    return None


def _concatenated(it: ast.expr) -> list[ast.expr]:
    """The parts of ``a + b``, each unwrapped from ``list(...)``."""
    if isinstance(it, ast.BinOp) and isinstance(it.op, ast.Add):
        return _concatenated(it.left) + _concatenated(it.right)
    if (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id in ("list", "tuple")
        and it.args
    ):
        return _concatenated(it.args[0])
    return [it]


def _container(it: ast.expr) -> ast.expr:
    """``stats`` of ``stats.values()`` / ``stats.items()`` / ``stats``."""
    return it.func.value if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) else it


def _scaled_from(ctx: FileContext, scope: ast.AST, names: set[str]) -> set[str]:
    """The loss behind a scaled alias: ``with amp.scale_loss(loss, optimizer) as scaled_loss:``."""
    out: set[str] = set()
    for n in ctx.local(scope):
        if isinstance(n, (ast.With, ast.AsyncWith)):
            for item in n.items:
                var = item.optional_vars
                if isinstance(var, ast.Name) and var.id in names and isinstance(item.context_expr, ast.Call):
                    out |= {a.id for a in item.context_expr.args[:1] if isinstance(a, ast.Name)}
    return out
