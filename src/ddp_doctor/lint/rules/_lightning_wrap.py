"""A PyTorch Lightning ``Trainer`` that runs DDP: the wrap batchnorm-unsynced looks for, spelled as
trainer arguments.

Lightning wraps the LightningModule in DistributedDataParallel itself when the strategy (older:
``accelerator``/``distributed_backend``) is DDP, and converts BatchNorm to SyncBatchNorm only under
``sync_batchnorm=True`` (or a ``TorchSyncBatchNorm`` plugin). So ``Trainer(strategy='ddp', ...)``
without it, then ``trainer.fit(model)`` of a module holding BatchNorm, is the same bug as
``DDP(model)`` without a conversion (MRIGAN4 ``pl.Trainer(accelerator='gpu',
devices=args.num_gpus, strategy='ddp')``). A strategy or ``sync_batchnorm`` read from
configuration (``distributed_backend=args.distributed_backend``, ``sync_batchnorm=args.sync_batchnorm``,
``Trainer.from_argparse_args(args)`` whose flags come from the command line) makes the finding
config-gated on that value. A Trainer with no DDP strategy written is not reported (one device,
or a choice made elsewhere).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddp_doctor.lint.context import FileContext, dotted, keyword

TRAINERS = frozenset(
    {
        "pytorch_lightning.Trainer",
        "pytorch_lightning.trainer.Trainer",
        "pytorch_lightning.trainer.trainer.Trainer",
        "lightning.Trainer",
        "lightning.pytorch.Trainer",
        "lightning.pytorch.trainer.Trainer",
        "lightning.pytorch.trainer.trainer.Trainer",
    }
)
STRATEGY_KEYWORDS = ("strategy", "accelerator", "distributed_backend")


@dataclass(frozen=True)
class LightningWrap:
    call: ast.Call  # the ``Trainer(...)`` call: where the finding is reported
    gate: str | None  # the configuration under which it runs DDP without SyncBatchNorm; None: always
    fits: tuple[ast.Call, ...]  # its ``trainer.fit(model, ...)`` calls


def lightning_ddp_wraps(ctx: FileContext) -> list[LightningWrap]:
    out: list[LightningWrap] = []
    for call in ctx.of_type(ast.Call):
        q = ctx.call_qualname(call) or ""
        from_args = q.endswith(".from_argparse_args") and q.rsplit(".", 1)[0] in TRAINERS
        if q not in TRAINERS and not from_args:
            continue
        gates: list[str] = []
        strategy = _strategy(ctx, call)
        if strategy is False:
            continue
        if isinstance(strategy, str):
            gates.append(strategy)
        elif strategy is None:
            if not from_args:
                continue  # no DDP strategy written
            gates.append("a DDP strategy given on the command line (Trainer.add_argparse_args)")
        synced = _sync(ctx, call, from_args)
        if synced is True:
            continue
        if isinstance(synced, str):
            gates.append(synced)
        fits = tuple(_fits_of(ctx, call))
        if fits:
            out.append(LightningWrap(call, " and ".join(gates) or None, fits))
    return out


def fit_model(fit: ast.Call) -> ast.expr | None:
    """The module ``trainer.fit(model, ...)`` trains (positional or ``model=``)."""
    return fit.args[0] if fit.args else keyword(fit, "model")


def _strategy(ctx: FileContext, call: ast.Call) -> bool | str | None:
    """True: DDP; False: another strategy; a string: DDP when that configuration says so; None:
    nothing written."""
    found: bool | str | None = None
    for name in STRATEGY_KEYWORDS:
        value = keyword(call, name)
        if value is None:
            continue
        if isinstance(value, ast.Constant):
            if isinstance(value.value, str) and "ddp" in value.value.lower():
                return True
            if name == "strategy" or (
                isinstance(value.value, str) and value.value.lower() in ("dp", "fsdp", "deepspeed")
            ):
                found = False if found is None else found
            continue
        text = dotted(value.func) if isinstance(value, ast.Call) else None
        if text is not None and "DDP" in text:
            return True  # DDPStrategy(...), DDPPlugin(...)
        if isinstance(value, ast.IfExp):
            # ``DDPPlugin(...) if args.strategy == 'ddp' else args.strategy``: DDP when the test holds
            if any(_names_ddp(branch) for branch in (value.body, value.orelse)):
                return f"{ctx.segment(value.test)}"
            continue
        if isinstance(value, ast.Name):
            # a local of the function: the literals it is bound to decide (nanodet
            # ``accelerator, devices, strategy = "gpu", ids, None`` then ``strategy = "ddp"`` under
            # ``if len(devices) > 1:``): a DDP literal among them is DDP under that binding's branch
            literals = _bound_literals(ctx, call, value.id)
            if literals is not None:
                ddp = [where for v, where in literals if isinstance(v, str) and "ddp" in v.lower()]
                if ddp:
                    return f"{value.id} = 'ddp' ({ddp[0]})"
                continue  # bound only to other strategies or devices
        if isinstance(value, (ast.Name, ast.Attribute, ast.Subscript)):
            found = f"{ctx.segment(value)} names a DDP strategy"
    for plugin in _plugins(call):
        text = dotted(plugin.func) if isinstance(plugin, ast.Call) else dotted(plugin)
        if text and "DDP" in text:
            return True
    return found


def _names_ddp(node: ast.expr) -> bool:
    """A DDP strategy written out: ``"ddp"``, ``"ddp_spawn"``, ``DDPStrategy(...)``, ``DDPPlugin(...)``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and "ddp" in node.value.lower()
    text = dotted(node.func) if isinstance(node, ast.Call) else None
    return text is not None and "DDP" in text


def _bound_literals(ctx: FileContext, call: ast.Call, name: str) -> list[tuple[object, str]] | None:
    """The literal values ``name`` is bound to in the function of ``call`` before it, each with where
    (``line N``): plain assignments and tuple assignments of a tuple; None when one binding is not a
    literal or the name is not bound there (a parameter, a global)."""
    scope = ctx.enclosing_function(call)
    out: list[tuple[object, str]] = []
    for b in ctx.bindings(scope).get(name, []):
        if b.lineno > call.lineno:
            continue
        if not isinstance(b, ast.Assign) or len(b.targets) != 1:
            return None
        target, value = b.targets[0], b.value
        if (
            isinstance(target, ast.Tuple)
            and isinstance(value, ast.Tuple)
            and len(target.elts) == len(value.elts)
        ):
            pairs = [
                (t, v) for t, v in zip(target.elts, value.elts) if isinstance(t, ast.Name) and t.id == name
            ]
            if len(pairs) != 1:
                return None
            value = pairs[0][1]
        elif not (isinstance(target, ast.Name) and target.id == name):
            return None
        if not isinstance(value, ast.Constant):
            return None
        out.append((value.value, f"line {b.lineno}"))
    return out or None


def _sync(ctx: FileContext, call: ast.Call, from_args: bool) -> bool | str:
    """True: BatchNorm is synchronised; False: it is not; a string: not when that value is false."""
    for plugin in _plugins(call):
        text = dotted(plugin.func) if isinstance(plugin, ast.Call) else dotted(plugin)
        if text and "SyncBatchNorm" in text:
            return True
    value = keyword(call, "sync_batchnorm")
    if value is None:
        return "no --sync_batchnorm" if from_args else False
    if isinstance(value, ast.Constant):
        return bool(value.value)
    return f"{ctx.segment(value)} false"


def _plugins(call: ast.Call) -> list[ast.expr]:
    value = keyword(call, "plugins")
    if isinstance(value, (ast.List, ast.Tuple)):
        return list(value.elts)
    return [value] if value is not None else []


def _fits_of(ctx: FileContext, call: ast.Call) -> list[ast.Call]:
    """``trainer.fit(...)`` of the trainer ``call`` builds: chained, or through the name it is
    assigned to in the same function."""
    parent = ctx.parents.get(call)
    if isinstance(parent, ast.Attribute) and parent.attr == "fit":
        chained = ctx.parents.get(parent)
        return [chained] if isinstance(chained, ast.Call) else []
    if not isinstance(parent, ast.Assign):
        return []
    names = {d for t in parent.targets if (d := dotted(t))}
    scope = ctx.enclosing_function(call)
    return [
        c
        for c in ctx.of_type(ast.Call)
        if isinstance(c.func, ast.Attribute)
        and c.func.attr == "fit"
        and dotted(c.func.value) in names
        and ctx.enclosing_function(c) is scope
    ]
