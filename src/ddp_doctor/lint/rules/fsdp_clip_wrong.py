"""fsdp-clip-wrong: ``torch.nn.utils.clip_grad_norm_`` on a model wrapped by FSDP1.

An FSDP1 (``FullyShardedDataParallel``) model holds only this rank's shard of each flat
parameter, so the function computes a per-rank norm and every rank clips differently; FSDP1's
own ``model.clip_grad_norm_`` all-reduces the norm (torch docs, FullyShardedDataParallel.
clip_grad_norm_). FSDP2 ``fully_shard`` parameters are DTensors and the torch function is
correct there, so FSDP2 code is never flagged. NO_SHARD FSDP1 holds full parameters: not flagged.
Autofix: ``clip_grad_norm_(m.parameters(), n)`` → ``m.clip_grad_norm_(n)``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.context import FileContext, dotted, keyword, method
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.module_moves import unmoved
from ddp_doctor.lint.rules.base import Rule, Violation, replace_node

FSDP1 = "torch.distributed.fsdp.FullyShardedDataParallel"
CLIP = "torch.nn.utils.clip_grad_norm_"


class FsdpClipWrong(Rule):
    id = "fsdp-clip-wrong"
    flagged = (
        "`torch.nn.utils.clip_grad_norm_(m.parameters(), ...)` where `m` was assigned an FSDP1 "
        "`FullyShardedDataParallel(...)` (also moved, `.to(device)`, or through a local name it was bound to), "
        "or `m` a parameter that a same-file call hands such a wrap"
    )
    not_flagged = (
        "FSDP2 `fully_shard` (DTensor parameters: the torch function is correct), "
        "`m.clip_grad_norm_`, `NO_SHARD`, the torch function in one branch of an `if` whose other "
        "branch calls `m.clip_grad_norm_` (the code picks the clip per engine)"
    )
    autofix = "rewrites to `m.clip_grad_norm_(...)`"
    required = (("FullyShardedDataParallel",),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        wrapped: dict[str, list[ast.ClassDef | None]] = {}  # target -> classes whose code wraps it
        for node in ctx.of_type(ast.Assign):
            if _fsdp1_value(ctx, node.value, node):
                for t in node.targets:
                    if d := dotted(t):
                        wrapped.setdefault(d, []).append(_owner(ctx, node))
        if not wrapped:
            return
        for call in ctx.of_type(ast.Call):
            if ctx.call_qualname(call) != CLIP or not call.args:
                continue
            m = method(call.args[0])
            if (
                m
                and m[0]
                and m[1] == "parameters"
                and (
                    m[0] in wrapped
                    and _reaches(ctx, call, m[0], wrapped[m[0]])
                    or _handed_wrap(ctx, call, m[0])
                )
                and not _engine_branch(ctx, call, m[0])
            ):
                rest = [ctx.segment(a) for a in call.args[1:]] + [ctx.segment(k) for k in call.keywords]
                fix = (
                    replace_node(ctx, call, f"{m[0]}.clip_grad_norm_({', '.join(rest)})")
                    if all(rest)
                    else None
                )
                yield self.violation(
                    call,
                    Text(
                        f"torch.nn.utils.clip_grad_norm_ on the FSDP1 model `{m[0]}` sees only this rank's shard; "
                        f"use `{m[0]}.clip_grad_norm_(...)`.",
                        f"对 FSDP1 模型 `{m[0]}` 调用 torch.nn.utils.clip_grad_norm_ 只看到本 rank 的分片；"
                        f"请用 `{m[0]}.clip_grad_norm_(...)`。",
                    ),
                    edits=(fix,) if fix else (),
                    module=m[0],
                )


def _handed_wrap(ctx: FileContext, clip: ast.Call, name: str | None) -> bool:
    """``name`` is a parameter of the clip's function (never rebound there) and a same-file call of
    that function hands it a name bound to an FSDP1 wrap in the caller (``dist_model = FSDP(model,
    ...)`` then ``self.train_epoch(dist_model, epoch)``, whose ``model.parameters()`` are the shards)."""
    fn = ctx.enclosing_function(clip)
    if name is None or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if name not in params or ctx.bindings(fn).get(name):
        return False
    position = params.index(name)
    bound = params[0] in ("self", "cls")
    for call in ctx.of_type(ast.Call):
        if ctx.helper(call) is not fn:
            continue
        index = position - 1 if bound and isinstance(call.func, ast.Attribute) else position
        arg = call.args[index] if 0 <= index < len(call.args) else keyword(call, name)
        handed = dotted(arg) if arg is not None else None
        if handed is None:
            continue
        caller = ctx.enclosing_function(call)
        if any(
            isinstance(b, ast.Assign)
            and b.lineno < call.lineno
            and isinstance(b.value, ast.Call)
            and ctx.call_qualname(b.value) == FSDP1
            and not _no_shard(b.value)
            for b in ctx.bindings(caller).get(handed, [])
        ):
            return True
    return False


def _fsdp1_value(ctx: FileContext, value: ast.expr, at: ast.stmt) -> bool:
    """``value`` is a sharded FSDP1 wrap: ``FSDP(m, ...)``, also moved (``FSDP(m).to(device)``), or a
    plain name the same function bound to one before ``at`` (sparklerz's ``fsdp_model = FSDP(model,
    ...)`` then ``self.model = fsdp_model.to(self.device)``: the attribute the clip reads holds the wrap)."""
    held = unmoved(ctx, value)
    if isinstance(held, ast.Name):
        binds = ctx.bindings(ctx.enclosing_function(at)).get(held.id, [])
        before = [b for b in binds if b.lineno < at.lineno]
        last = before[-1] if before else None
        held = unmoved(ctx, last.value) if isinstance(last, ast.Assign) and len(last.targets) == 1 else held
    return isinstance(held, ast.Call) and ctx.call_qualname(held) == FSDP1 and not _no_shard(held)


def _owner(ctx: FileContext, node: ast.AST) -> ast.ClassDef | None:
    fn = ctx.enclosing_function(node)
    parent = ctx.parents.get(fn)
    return parent if isinstance(parent, ast.ClassDef) else None


def _reaches(ctx: FileContext, call: ast.Call, model: str, wrappers: list[ast.ClassDef | None]) -> bool:
    """A ``self.X`` clip runs on an object some FSDP1 wrap of ``self.X`` can reach: the wrap is in
    the clip's class, in a base of it, or in a subclass that does not override the clipping method.
    DPO's ``BasicTrainer.clip_gradient`` uses the torch function while its ``FSDPTrainer`` (which
    wraps ``self.policy``) overrides ``clip_gradient`` with ``self.policy.clip_grad_norm_``: the
    torch function never sees the FSDP model. Plain (non-``self``) names keep the file-wide match."""
    here = _owner(ctx, call)
    if not model.startswith("self.") or here is None:
        return True
    fn = ctx.enclosing_function(call)
    name = fn.name if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    for cls in wrappers:
        if cls is None or cls is here or cls.name in _bases(ctx, here):
            return True
        if here.name in _bases(ctx, cls) and not _overrides_between(ctx, cls, here, name):
            return True
    return False


def _bases(ctx: FileContext, cls: ast.ClassDef) -> set[str]:
    """Names of ``cls``'s ancestors, followed through the classes of this file."""
    by_name = {c.name: c for c in ctx.of_type(ast.ClassDef)}
    out: set[str] = set()
    todo = [cls]
    while todo:
        for b in todo.pop().bases:
            d = (dotted(b) or "").rsplit(".", 1)[-1]
            if d and d not in out:
                out.add(d)
                if d in by_name:
                    todo.append(by_name[d])
    return out


def _overrides_between(ctx: FileContext, sub: ast.ClassDef, base: ast.ClassDef, name: str | None) -> bool:
    """``sub`` (or a class between it and ``base``) defines method ``name`` again."""
    if name is None:
        return False
    by_name = {c.name: c for c in ctx.of_type(ast.ClassDef)}
    chain = [sub] + [by_name[b] for b in _bases(ctx, sub) if b in by_name and b != base.name]
    return any(
        isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == name
        for c in chain
        if c is sub or base.name in _bases(ctx, c)
        for f in c.body
    )


def _engine_branch(ctx: FileContext, call: ast.Call, model: str) -> bool:
    """The clip sits in one branch of an ``if`` whose other branch clips with ``model.clip_grad_norm_``:
    the code picks the clip per engine (wenet: ``if train_engine == "torch_ddp": clip_grad_norm_(
    model.parameters(), c) else: model.clip_grad_norm_(c)``), so the torch function is the DDP path."""
    child: ast.AST = call
    cur = ctx.parents.get(call)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(cur, ast.If):
            other = cur.orelse if child in cur.body else cur.body
            for stmt in other:
                for n in ast.walk(stmt):
                    m = method(n) if isinstance(n, ast.Call) else None
                    if m and m[0] == model and m[1] == "clip_grad_norm_":
                        return True
        child, cur = cur, ctx.parents.get(cur)
    return False


def _no_shard(call: ast.Call) -> bool:
    strategy = keyword(call, "sharding_strategy")
    return strategy is not None and (dotted(strategy) or "").endswith("NO_SHARD")
