"""Values combined across ranks: which calls reduce, gather or synchronise what they are handed or
return (``all_reduce``, ``reduce_dict``, ``all_gather``, ``meter.synchronize_between_processes()``,
a project helper that returns what it all-reduced, a torchmetrics metric that syncs on ``compute``).

A value read after one of these is not rank-local any more: rank0-only-loss-log's provenance
(``lint/provenance.py``) stops there, and project mode records it (``Summary.returns_reduced``).
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterator

from ddp_doctor.lint.context import FileContext, Scope, dotted, keyword, method
from ddp_doctor.lint.idioms import SYNC_ON_COMPUTE
from ddp_doctor.lint.metric_attributes import built_synced_on_self
from ddp_doctor.lint.module_moves import SAME_MODULE_METHODS

REDUCE_WORDS = frozenset({"reduce", "allreduce", "gather", "allgather", "average", "sync", "synchronize"})


# Modules of single-process numerics: their ``average``/``gather``-named functions combine this
# process's values only (``np.average``, ``statistics.fmean``), nothing across ranks.
LOCAL_MODULES = frozenset({"np", "numpy", "statistics", "math", "pd", "pandas", "scipy"})


NOT_REDUCE_WORDS = frozenset({"batchnorm", "bn", "convert", "time", "timer", "plateau", "lron"})


# A test that is true only when not distributed: ``not args.distributed``, ``world_size == 1``.
# ``FileContext.memo`` key: while the project index reads a file again (project_scan
# ``_refine_meter_returns``), a test of whether a call builds a project meter class whose update reduces
SCAN_SYNCED_METERS = ("scan-synced-meters",)
SYNC_KEYWORD = re.compile(r"distributed|sync|reduce|gather", re.IGNORECASE)


def is_reduce(name: str) -> bool:
    """A call that combines values across ranks, by its last name's words (``all_reduce``,
    ``reduce_dict``, ``all_gather``, ``synchronize_between_processes``, the autograd function
    ``AllReduce.apply``; not ``convert_sync_batchnorm`` nor ``time_sync``)."""
    parts = name.split(".")
    if len(parts) > 1 and parts[0] in LOCAL_MODULES:
        return False  # ``np.average(train_loss)``: numpy's weighted mean of this process's values
    last = parts[-2] if len(parts) > 1 and parts[-1] == "apply" else parts[-1]  # AllReduce.apply(loss)
    if last[:1].isupper() and parts[-1] != "apply":
        return False  # a class built, not a value combined: ``AverageMeter()``, ``SyncMeter()``
    words = set(re.sub(r"([a-z])([A-Z])", r"\1_\2", last).lower().split("_"))
    return bool(words & REDUCE_WORDS) and not words & NOT_REDUCE_WORDS


def picks_elements(call: ast.Call) -> bool:
    """``torch.gather(x, 1, index)`` / ``x.gather(-1, index)`` / ``gather(x, dim=1, index=i)``: a
    tensor op that picks elements along a dimension of one tensor (its dimension, an int, is one of
    its first two arguments, or it is handed ``dim``/``index``), not a collective: nothing is
    combined across ranks (``dist.gather(t, gather_list, dst)`` and ``accelerator.gather(t)`` take
    tensors and lists there)."""
    name = dotted(call.func) or ""
    if name.rsplit(".", 1)[-1] != "gather":
        return False
    if any(k.arg in ("dim", "index") for k in call.keywords):
        return True
    for a in call.args[:2]:
        if isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub):
            a = a.operand
        if isinstance(a, ast.Constant) and type(a.value) is int:
            return True
    return False


def reducing_call(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` is a call whose result is combined across ranks: by its name (``is_reduce``), or a
    helper that returns what it reduced — a same-file one (two calls deep) or, in project mode, a
    project function (lingua's ``dist_mean_dict`` returns ``dist_mean(v)``, which returns the tensor
    it ``dist.all_reduce``-d). A helper that reduces something else (MSN's loss all-reduces its
    Sinkhorn sums, not the loss it returns) is not one."""
    if not isinstance(node, ast.Call) or picks_elements(node):
        return False
    if is_reduce(dotted(node.func) or ""):
        return not named_only(ctx, node)
    if ctx.helper(node) is not None:
        return _helper_call_reduces(ctx, node, 2)
    if ctx.project is None:
        return False
    summary = ctx.project.summary_for(ctx, node.func)
    return (
        summary is not None
        and summary.returns_reduced
        and not summary.qualname.rsplit(".", 1)[-1][:1].isupper()
    )


def outside_reductions(ctx: FileContext, value: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``value`` (``ast.walk`` order) less the arguments of the calls in it that combine
    across ranks: what ``accelerator.gather(losses).mean().item()`` or ``reduce_mean(loss).item()``
    logs is every rank's value, so the names handed to the collective are not read as this rank's.
    An item picked out of the result by index (``all_gather(x)[0]``) is one rank's: read as is."""
    todo: deque[ast.AST] = deque([value])
    while todo:
        node = todo.popleft()
        yield node
        if isinstance(node, ast.Call) and not _picked_item(ctx, node) and reducing_call(ctx, node):
            todo.append(node.func)  # (``self.accelerator`` of the call is read, not what it combines)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _picked_item(ctx: FileContext, call: ast.Call) -> bool:
    parent = ctx.parents.get(call)
    return (
        isinstance(parent, ast.Subscript) and parent.value is call and not isinstance(parent.slice, ast.Slice)
    )


# Python builtins a function that only computes on its own values calls
_LOCAL_BUILTINS = frozenset(
    {"sum", "len", "list", "dict", "tuple", "set", "zip", "sorted", "map", "min", "max", "abs",
     "float", "int", "round", "isinstance", "enumerate", "range", "iter", "next", "any", "all"}
)  # fmt: skip


def named_only(ctx: FileContext, call: ast.Call) -> bool:
    """A call named like a collective whose code (a def of this file, or of the project) calls
    nothing that could combine values across ranks (:func:`local_only`): MonoDetector's
    ``reduce_loss_dict`` only sums this rank's loss terms."""
    helper = ctx.helper(call)
    if helper is not None:
        return local_only(ctx, helper)
    summary = ctx.project.summary_for(ctx, call.func) if ctx.project is not None else None
    return summary is not None and summary.local_only


def local_only(ctx: FileContext, fn: ast.AST) -> bool:
    """``fn`` calls only Python builtins and methods of its own values (``loss_dict.values()``,
    ``v.item()``), none of them named like a collective: whatever its name says, it combines nothing
    across ranks (MonoDetector's ``def reduce_loss_dict(d): return sum([v for v in d.values()])``)."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for n in ctx.local(fn):
        if not isinstance(n, ast.Call):
            continue
        func = n.func
        if isinstance(func, ast.Name):
            if func.id not in _LOCAL_BUILTINS:
                return False
            continue
        if not isinstance(func, ast.Attribute) or is_reduce(func.attr):
            return False
        base = func.value
        while isinstance(base, (ast.Attribute, ast.Subscript, ast.Call)):
            base = base.func if isinstance(base, ast.Call) else base.value
        if not isinstance(base, ast.Name) or base.id in ctx.imports or base.id == "self":
            return False  # ``dist.all_reduce``, ``torch.stack``, ``self.sync()``: not its own values
    return True


def _helper_call_reduces(ctx: FileContext, call: ast.Call, depth: int) -> bool:
    helper = ctx.helper(call)
    if helper is None:
        return False
    direct, calls = returned_reductions(ctx, helper)
    return direct or (
        depth > 0 and any(c is not call and _helper_call_reduces(ctx, c, depth - 1) for c in calls)
    )


def returned_reductions(ctx: FileContext, fn: ast.AST) -> tuple[bool, list[ast.Call]]:
    """What ``fn`` returns of values combined across ranks: True when a return reads a name it
    reduced in place (``dist.all_reduce(t); return t``) or a collective's result (``return
    all_gather(x)``); else the other calls whose results it returns (directly or through the names
    and items it assigns: ``r[k] = dist_mean(x[k]); return r``), for the caller to resolve."""
    nodes = ctx.local(fn)
    reduced: dict[str, int] = {}  # name -> line of the collective that combined it in place
    feeds: dict[str, list[ast.Call]] = {}  # name -> calls whose results it is assigned
    assigns: list[tuple[ast.Assign | ast.AugAssign | ast.AnnAssign, list[str]]] = []
    for n in nodes:
        if (
            isinstance(n, ast.Call)
            and isinstance(ctx.parents.get(n), ast.Expr)
            and n.args
            and isinstance(n.args[0], ast.Name)
            and combines_ranks(ctx.call_qualname(n) or "", dotted(n.func) or "")
        ):
            reduced.setdefault(n.args[0].id, n.lineno)
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            calls = [c for c in ast.walk(n.value) if isinstance(c, ast.Call)]
            names = []
            for t in targets:
                base = t.value if isinstance(t, ast.Subscript) else t
                for e in base.elts if isinstance(base, ast.Tuple) else [base]:
                    if isinstance(e, ast.Name):
                        feeds.setdefault(e.id, []).extend(calls)
                        names.append(e.id)
            assigns.append((n, names))
    # read out of a tensor combined in place: ``dist.reduce(t, dst=0); mean = t.item() / world_size;
    # return mean`` (scBERT's ``get_reduced``) or ``dist.all_reduce(m); loss = m[0].item() / m[2].item()``
    for n, names in sorted(assigns, key=lambda a: a[0].lineno):
        assert n.value is not None
        if any(isinstance(x, ast.Name) and reduced.get(x.id, n.lineno) < n.lineno for x in ast.walk(n.value)):
            for name in names:
                reduced.setdefault(name, n.lineno)
    direct = False
    returned: list[ast.Call] = []
    for r in nodes:
        if not isinstance(r, ast.Return) or r.value is None:
            continue
        for x in ast.walk(r.value):
            if isinstance(x, ast.Name):
                direct |= x.id in reduced
                returned += feeds.get(x.id, [])
            elif isinstance(x, ast.Call):
                returned.append(x)
    direct |= any(combines_ranks(ctx.call_qualname(c) or "", dotted(c.func) or "") for c in returned)
    return direct, returned


def combined_itself_before(ctx: FileContext, nodes: list[ast.AST], name: str, line: int) -> bool:
    """A collective combines ``name`` in place (``dist.reduce(loss, dst=0)`` as a statement) before
    ``line``, and every later binding of ``name`` before ``line`` is computed from ``name`` itself
    (``loss = loss / world_size``): melodyt5's ``process_one_batch`` returns the loss it reduced.
    A name only computed from a reduced normaliser (``loss = loss_sum / num_fgs`` after
    ``all_reduce(num_fgs)``) is not it: its sum is this rank's."""
    first = min(
        (
            n.lineno
            for n in nodes
            if isinstance(n, ast.Call)
            and isinstance(ctx.parents.get(n), ast.Expr)
            and n.args
            and isinstance(n.args[0], ast.Name)
            and n.args[0].id == name
            and n.lineno < line
            and combines_ranks(ctx.call_qualname(n) or "", dotted(n.func) or "")
        ),
        default=None,
    )
    if first is None:
        return False
    for n in nodes:
        if not isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) or not first < n.lineno < line:
            continue
        targets = n.targets if isinstance(n, ast.Assign) else [n.target]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and not (
            isinstance(n, ast.AugAssign)
            or (
                n.value is not None
                and any(isinstance(x, ast.Name) and x.id == name for x in ast.walk(n.value))
            )
        ):
            return False  # bound to something else after the collective
    return True


def reduces_own_state(ctx: FileContext, fn: ast.AST) -> bool:
    """A method whose body combines its instance's state across ranks in place: a collective on
    ``self.x`` (``dist.all_reduce(self.total)``) or a reduce-named method of it
    (``self.metrics[i].all_reduce(device)``)."""
    for n in ctx.local(fn):
        if not isinstance(n, ast.Call) or not isinstance(ctx.parents.get(n), ast.Expr):
            continue
        qualname = ctx.call_qualname(n) or ""
        if qualname.startswith("torch.distributed."):
            handed = n.args[:1]  # dist.all_reduce(self.total)
        elif isinstance(n.func, ast.Attribute) and is_reduce(n.func.attr):
            handed = [n.func.value]  # self.metrics[i].all_reduce(device), self.meter.synchronize()
        else:
            continue
        if any(isinstance(x, ast.Name) and x.id == "self" for h in handed for x in ast.walk(h)):
            return True
    return False


def combines_ranks(qualname: str, name: str) -> bool:
    """A call that surely combines values across ranks, for what a helper does with its values:
    ``torch.distributed``'s collectives, or a name saying reduce / all-gather (``reduce_tensor``,
    ``all_gather``, accelerate's ``accelerator.gather``). Stricter than ``is_reduce``: not the
    words a timer or tensor op shares (``torch.cuda.synchronize``, ``end.synchronize()`` in MSN's
    ``gpu_timer``, ``logits.gather(1, idx)``), nor a meter's ``sync``."""
    if qualname.startswith("torch.distributed."):
        return is_reduce(qualname)
    if qualname.startswith("torch."):
        return False
    last = name.rsplit(".", 1)[-1]
    words = set(re.sub(r"([a-z])([A-Z])", r"\1_\2", last).lower().split("_"))
    if words & NOT_REDUCE_WORDS:
        return False
    if words & {"reduce", "allreduce", "allgather"}:
        return True
    return "gather" in words and ("all" in words or "accelerator" in name)


def reduced_iteration(it: ast.expr) -> bool:
    """``for k, v in sorted(run_stats.average_stats.items()):`` (contriever) or ``for k, v in
    reduce_dict(stats).items():``: the loop walks values combined across ranks, read through a
    reduce-named call or property."""
    return any(
        (isinstance(n, ast.Call) and is_reduce(dotted(n.func) or ""))
        or (isinstance(n, ast.Attribute) and is_reduce(n.attr))
        for n in ast.walk(it)
    )


def reduced_before(
    binds: list[ast.stmt | ast.expr],
    line: int,
    reduced_at: dict[str, list[int]] | None = None,
    scope_binds: dict[str, list[ast.stmt | ast.expr]] | None = None,
) -> bool:
    """The latest binding before ``line`` assigns a reduce/gather result, or a value read out of a
    tensor a collective combined in place before it (``reduced_at``; ``t = torch.tensor(avg);
    dist.all_reduce(t); avg = (t / world_size).item()``)."""
    before = [b for b in binds if b.lineno < line]
    # ``else: epoch_loss = None`` beside ``epoch_loss = torch.cat(gathered).mean().item()`` on rank 0
    # (FeedbackPrize's gather to rank 0): a None holds no value; the binding before it decides
    while len(before) > 1 and _binds_none(before[-1]):
        before.pop()
    if not before or not isinstance(before[-1], (ast.Assign, ast.AnnAssign)) or before[-1].value is None:
        return False
    value = before[-1].value
    if _reduces(value):
        return True
    if scope_binds is not None and _reads_gathered_whole(value, before[-1].lineno, scope_binds):
        return True
    return bool(reduced_at) and reads_combined(value, before[-1].lineno, reduced_at or {}, scope_binds)


def _reduces(value: ast.AST) -> bool:
    return any(
        isinstance(x, ast.Call) and is_reduce(dotted(x.func) or "") and not picks_elements(x)
        for x in ast.walk(value)
    )


def _binds_none(binding: ast.AST) -> bool:
    """``x = None``: the name is emptied, it holds no value."""
    value = getattr(binding, "value", None)
    return (
        isinstance(binding, (ast.Assign, ast.AnnAssign))
        and isinstance(value, ast.Constant)
        and value.value is None
    )


def _reads_gathered_whole(
    value: ast.AST, line: int, scope_binds: dict[str, list[ast.stmt | ast.expr]]
) -> bool:
    """``value`` combines a name whose latest binding before ``line`` is a gather/reduce result, read
    whole (``torch.cat(epoch_loss).mean()`` after ``epoch_loss = my_gather(epoch_loss, ...)``): the
    global value. Not one rank's item picked out of it (``gathered[rank]``). A dict written out
    (``payload = {"loss": loss, "loss_avg": meter.avg}`` after ``loss = all_reduce_mean(loss)``) is
    not one value computed from them: it is combined when each of its values is."""
    if isinstance(value, ast.Dict):
        return bool(value.values) and all(_reads_gathered_whole(v, line, scope_binds) for v in value.values)
    names: set[str] = set()
    for x in ast.walk(value):
        if isinstance(x, ast.Subscript) and isinstance(x.value, ast.Name):
            return False
        if isinstance(x, ast.Name):
            names.add(x.id)
    for name in names:
        before = [b for b in scope_binds.get(name, []) if b.lineno < line]
        last = before[-1] if before else None
        if isinstance(last, (ast.Assign, ast.AnnAssign)) and last.value is not None and _reduces(last.value):
            return True
    return False


def reads_combined(
    value: ast.AST,
    line: int,
    reduced_at: dict[str, list[int]],
    scope_binds: dict[str, list[ast.stmt | ast.expr]] | None,
    depth: int = 2,
) -> bool:
    """``value`` (evaluated at ``line``) reads a name that a collective combined in place before
    ``line``, after that name's own latest binding: what it computes is the global value. Also when
    that latest binding is itself computed from the combined name (``dist.all_reduce(metrics)``;
    ``metrics = metrics / world_size``; ``loss, aux = metrics.tolist()``: NERVE's epoch means),
    ``depth`` rebindings deep."""
    for x in ast.walk(value):
        # the names the in-place collective recorded: plain names and ``self.x``
        name = x.id if isinstance(x, ast.Name) else dotted(x) if isinstance(x, ast.Attribute) else None
        if name is None or not (lines := reduced_at.get(name)):
            continue
        bound = [b for b in (scope_binds or {}).get(name, []) if b.lineno < line]
        since = max((b.lineno for b in bound), default=0)
        if any(since <= at < line for at in lines):
            return True
        last = bound[-1] if bound else None
        if (
            depth > 0
            and isinstance(last, ast.Assign)
            and last.lineno == since
            and reads_combined(last.value, since, reduced_at, scope_binds, depth - 1)
        ):
            return True
    return False


def reduces_in_place(ctx: FileContext, call: ast.Call) -> bool:
    """``call`` is evaluated for its effect: a statement of its own, one item of a statement that
    is a tuple of calls (``dist.all_reduce(a), dist.all_reduce(b)`` on one line), or an asynchronous
    collective whose result is only its handle (``h = dist.all_reduce(t, async_op=True); h.wait()``):
    the tensor it is handed is combined in place either way."""
    if _async_op(call):
        return True
    parent = ctx.parents.get(call)
    if isinstance(parent, ast.Tuple):
        parent = ctx.parents.get(parent)
    return isinstance(parent, ast.Expr)


def _async_op(call: ast.Call) -> bool:
    """``async_op=`` is set to anything but a literal False: torch.distributed's collectives then
    return a work handle, never the combined value, so the argument is what gets combined."""
    flag = keyword(call, "async_op")
    return flag is not None and not (isinstance(flag, ast.Constant) and not flag.value)


def synced_metric(ctx: FileContext, call: ast.Call) -> bool:
    """A torchmetrics-style metric that all-reduces in ``compute()`` (``sync_on_compute`` not False)."""
    while (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in SAME_MODULE_METHODS
        and isinstance(call.func.value, ast.Call)
    ):
        # ``MeanMetric().to(device)`` / ``.cuda(rank)``: a metric is an ``nn.Module``, whose
        # ``to``/``cuda`` return the module itself
        call = call.func.value
    flag = keyword(call, SYNC_ON_COMPUTE)
    if flag is not None:
        return not (isinstance(flag, ast.Constant) and flag.value is False)
    for k in call.keywords:  # a meter built to sync or not: ``AverageMeter(is_distributed=True)``
        if k.arg and SYNC_KEYWORD.search(k.arg) and isinstance(k.value, ast.Constant):
            return k.value.value is True
    if ctx.project is not None:  # a project meter class whose update reduces (efficientvit)
        summary = ctx.project.summary_for(ctx, call.func)
        if summary is not None and summary.syncs_updates:
            return True
    elif (scanned := ctx.memo.get(SCAN_SYNCED_METERS)) is not None and scanned(call):
        return True  # the same, while the project index reads the file (no project attached yet)
    qual = ctx.call_qualname(call) or ""
    # MONAI's metrics and ``CumulativeAverage`` gather their buffers across ranks in ``aggregate()``
    return qual.startswith("monai.metrics.") or (
        qual.startswith(("torchmetrics.", "lightning.", "pytorch_lightning.")) and "Metric" in qual
    )


def synced_metrics_built(ctx: FileContext, value: ast.expr) -> bool:
    """``value`` builds synced metrics: one (``synced_metric``), or a dict or list of them
    (``metrics = {k: CumulativeAverage() for k in ["dice", "loss"]}``)."""
    if isinstance(value, ast.Call):
        return synced_metric(ctx, value)
    if isinstance(value, ast.DictComp):
        return isinstance(value.value, ast.Call) and synced_metric(ctx, value.value)
    if isinstance(value, (ast.ListComp, ast.GeneratorExp)):
        return isinstance(value.elt, ast.Call) and synced_metric(ctx, value.elt)
    elts = value.values if isinstance(value, ast.Dict) else value.elts if isinstance(value, ast.List) else []
    return bool(elts) and all(isinstance(e, ast.Call) and synced_metric(ctx, e) for e in elts)


def synced_meter(ctx: FileContext, scope: Scope, receiver: str) -> bool:
    """The receiver comes from elsewhere (a parameter, an attribute) and is spelled like the
    project's synchronised meters: every call the project binds that spelling to builds a meter
    class whose update reduces (jukebox ``metrics = Metrics()`` in ``init_logging``, handed to
    ``train(..., metrics)`` and updated there). A receiver this scope assigns itself is its own."""
    if built_synced_on_self(ctx, scope, receiver, lambda call: synced_metric(ctx, call)):
        return True  # ``self.train_loss = MeanMetric()`` in ``__init__``, fed in ``training_step``
    own = [b for b in ctx.bindings(scope).get(receiver, []) if isinstance(b, ast.Assign)]
    if own and all(synced_metrics_built(ctx, b.value) for b in own):
        return True  # ``loss_values = AverageMeterDDP()`` here, a meter class whose update all-reduces
    if ctx.project is None or receiver.split(".")[-1] not in ctx.project.synced_meter_names:
        return False
    return "." in receiver or not any(
        isinstance(b, ast.Assign) for b in ctx.bindings(scope).get(receiver, [])
    )


def compute_of(call: ast.Call) -> str | None:
    m = method(call)
    return m[0] if m and m[1] == "compute" else None


def _gathered_lists(ctx: FileContext, scope: ast.AST) -> dict[str, int]:
    """Names ``scope`` hands ``all_gather`` to fill (``dist.all_gather(parts, local)``), with the line
    of the first such call: from there on the list holds every rank's tensor."""
    out: dict[str, int] = {}
    for node in ctx.local(scope):
        if (
            isinstance(node, ast.Call)
            and (dotted(node.func) or "").rsplit(".", 1)[-1] == "all_gather"
            and node.args
            and isinstance(node.args[0], ast.Name)
        ):
            name = node.args[0].id
            out[name] = min(out.get(name, node.lineno), node.lineno)
    return out


def computed_from_gathered(
    ctx: FileContext, scope: ast.AST, value: ast.expr, line: int, depth: int = 4
) -> bool:
    """``value`` (at ``line``) is computed from all-gathered tensors only: the contrastive loss over
    the whole global batch (E-Zero's ``dist.all_gather(agg_img, img_emb)``, ``agg_img =
    torch.cat(agg_img)``, then ``cma_loss, ... = clip_loss(agg_img, agg_text)`` and ``loss = cma_loss
    + uma_loss``) has the same value on every rank. Every positional argument of each call on the way
    must be such a value (open_clip's ``local_features @ all_features.T`` reads a local tensor: not)."""
    gathered = _gathered_lists(ctx, scope)
    if not gathered:
        return False
    return _from_gathered(ctx, scope, value, line, gathered, depth)


def _from_gathered(
    ctx: FileContext, scope: ast.AST, value: ast.expr, line: int, gathered: dict[str, int], depth: int
) -> bool:
    if isinstance(value, (ast.Subscript, ast.Attribute)):
        return _from_gathered(ctx, scope, value.value, line, gathered, depth)
    if isinstance(value, ast.BinOp):
        sides = [s for s in (value.left, value.right) if not isinstance(s, ast.Constant)]
        return bool(sides) and all(_from_gathered(ctx, scope, s, line, gathered, depth) for s in sides)
    if isinstance(value, ast.Call):
        return bool(value.args) and all(
            _from_gathered(ctx, scope, a, line, gathered, depth) for a in value.args
        )
    if not isinstance(value, ast.Name) or depth <= 0:
        return False
    if gathered.get(value.id, line) < line:
        return True  # (its own later whole rebinding, ``agg = torch.cat(agg)``, keeps every rank's values)
    before = [
        b
        for b in ctx.bindings(scope).get(value.id, [])
        if b.lineno < line and isinstance(b, ast.Assign) and not isinstance(b.targets[0], ast.Subscript)
    ]
    if not before:
        return False
    latest = max(before, key=lambda b: b.lineno)
    return _from_gathered(ctx, scope, latest.value, latest.lineno, gathered, depth - 1)


def reduced_return_positions(ctx: FileContext, fn: ast.AST) -> frozenset[int] | None:
    """The positions of the tuples ``fn`` returns (``return loss, log_vars``) whose item is combined
    across ranks where every tuple it returns has one: a name a collective reduced in place, or a
    dict whose every item a loop last replaced by a value read out of a tensor all-reduced in place
    (mmcv/mmdet's ``_parse_losses``: ``for name, value in log_vars.items(): value =
    value.data.clone(); dist.all_reduce(value.div_(world_size)); log_vars[name] = value.item()``,
    copied by SoftGroup and many detectors). None when it returns no tuple literal. The loss it
    returns beside them stays this rank's own."""
    nodes = ctx.local(fn)
    tuples = [r for r in nodes if isinstance(r, ast.Return) and isinstance(r.value, ast.Tuple)]
    if not tuples:
        return None
    combined = dicts_replaced_by_reduced(ctx, nodes) | {
        (name, line) for name, line in _reduced_in_place(ctx, nodes).items()
    }
    out: frozenset[int] | None = None
    for r in tuples:
        assert isinstance(r.value, ast.Tuple)
        here = frozenset(
            i
            for i, e in enumerate(r.value.elts)
            if isinstance(e, ast.Name)
            and any(name == e.id and line < r.lineno for name, line in combined)
            and not _written_between(
                nodes, e.id, max(line for name, line in combined if name == e.id), r.lineno
            )
        )
        out = here if out is None else out & here
    return out


def _in_place_target(ctx: FileContext, call: ast.Call) -> str | None:
    """``dist.all_reduce(t)`` or ``dist.all_reduce(t.div_(world_size))`` as a statement: ``t`` (an
    in-place method returns its receiver)."""
    if not (
        isinstance(ctx.parents.get(call), ast.Expr)
        and call.args
        and combines_ranks(ctx.call_qualname(call) or "", dotted(call.func) or "")
    ):
        return None
    arg = call.args[0]
    if (
        isinstance(arg, ast.Call)
        and isinstance(arg.func, ast.Attribute)
        and arg.func.attr.endswith("_")
        and not arg.func.attr.startswith("_")
    ):
        arg = arg.func.value
    return arg.id if isinstance(arg, ast.Name) else None


def _reduced_in_place(ctx: FileContext, nodes: list[ast.AST]) -> dict[str, int]:
    """Names combined in place by a collective statement, with the line of the first one."""
    out: dict[str, int] = {}
    for n in nodes:
        if isinstance(n, ast.Call) and (name := _in_place_target(ctx, n)) is not None:
            out.setdefault(name, n.lineno)
    return out


def dicts_replaced_by_reduced(ctx: FileContext, nodes: list[ast.AST]) -> set[tuple[str, int]]:
    """``(dict, end line of the loop)`` for each loop over a dict's items or keys whose body replaces
    the item of each key by a value combined across ranks: after the loop every item of the dict is
    every rank's value. The loop walks ``d.items()`` (``for k, v in ...``) or ``d``'s keys (``d``,
    ``d.keys()``, ``list(d)``); ``d[k] = ...`` is a statement of its body itself (a write under a
    test replaces only some items) and its value is combined (``_combined_in_loop``): jukebox's
    ``for key, val in _metrics.items(): _metrics[key] = metrics.update(key, val, n)``, FSRE-Depth's
    ``for loss_type in losses: losses[loss_type] = reduce_tensor(losses[loss_type].data, ws)``,
    mmcv's ``for name, value in log_vars.items(): ...; dist.all_reduce(value.div_(ws));
    log_vars[name] = value.item()``."""
    out: set[tuple[str, int]] = set()
    for s in nodes:
        if not (
            isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(target := s.targets[0], ast.Subscript)
            and isinstance(key := target.slice, ast.Name)
            and (container := dotted(target.value)) is not None
        ):
            continue
        loop = ctx.parents.get(s)
        if (
            isinstance(loop, ast.For)
            and s in loop.body
            and _walks_dict(loop, key.id, container)
            and _combined_in_loop(ctx, loop, s)
        ):
            out.add((container, getattr(loop, "end_lineno", None) or loop.lineno))
    return out


def _walks_dict(loop: ast.For, key: str, container: str) -> bool:
    """``loop`` binds ``key`` to each key of the dict ``container``: ``for key, v in
    container.items():`` or ``for key in container`` (its keys, ``list(...)`` of them)."""
    target, it = loop.target, loop.iter
    if isinstance(target, ast.Tuple):
        return (
            len(target.elts) == 2
            and isinstance(target.elts[0], ast.Name)
            and target.elts[0].id == key
            and isinstance(it, ast.Call)
            and isinstance(it.func, ast.Attribute)
            and it.func.attr == "items"
            and dotted(it.func.value) == container
        )
    return isinstance(target, ast.Name) and target.id == key and _iterated_keys(it) == container


def _iterated_keys(it: ast.expr) -> str | None:
    """The dict whose keys a loop walks: ``d``, ``d.keys()``, ``list(d)``, ``list(d.keys())``."""
    if (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id in ("list", "tuple", "sorted")
    ):
        if len(it.args) != 1 or it.keywords:
            return None
        it = it.args[0]
    if (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Attribute)
        and it.func.attr == "keys"
        and not it.args
    ):
        it = it.func.value
    return dotted(it) if isinstance(it, (ast.Name, ast.Attribute)) else None


def _combined_in_loop(ctx: FileContext, loop: ast.For, write: ast.Assign) -> bool:
    """The value ``write`` stores is combined across ranks: a reducing call, a call of a method every
    project definition of which returns a reduced value (jukebox's ``Metrics.update`` all-reduces the
    sum and the count and returns their ratio), or it reads a name a collective statement of the
    loop body reduced in place before (mmcv's ``value``)."""
    value = write.value
    if reducing_call(ctx, value):
        return True
    if (
        ctx.project is not None
        and isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and ctx.project.method_returns_reduced(value.func)
    ):
        return True
    reduced = _reduced_in_place(ctx, [x for s in loop.body for x in ast.walk(s)])
    return any(
        isinstance(x, ast.Name) and reduced.get(x.id, write.lineno) < write.lineno for x in ast.walk(value)
    )


def _written_between(nodes: list[ast.AST], name: str, start: int, end: int) -> bool:
    """``name`` is rebound, or an item of it written, between the two lines (``log_vars["x"] =
    local`` after the loop that reduced the others)."""
    for n in nodes:
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and start < n.lineno < end:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                base = t.value if isinstance(t, ast.Subscript) else t
                if any(isinstance(x, ast.Name) and x.id == name for x in ast.walk(base)):
                    return True
    return False
