"""Same-file helpers that build, compile and return a model (for compile-before-ddp).

``def init_network(args): net = get_model(args); if args.torch_compile: net = torch.compile(net);
return net, ema_net`` (CBIM ``train_ddp.py``), then ``net, ema_net = init_network(args)`` and
``DDP(net)`` in the caller: the wrap receives a compiled module whenever the helper's flag is on.
A helper that returns ``torch.compile`` of its *argument* is the project index's concern
(``ProjectIndex.call_compiles``); this one reads the helper's own body: which positions of what it
returns hold a name it bound to ``torch.compile(...)``, and under which configuration flag.
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext, dotted, walk_local
from ddp_doctor.lint.flags import gate_of

COMPILE = "torch.compile"


def compiled_positions(ctx: FileContext, call: ast.Call) -> dict[int | None, tuple[str, int]]:
    """For a call of a same-file function: position in the returned tuple (None: the whole value)
    -> (the gate text under which that value is a compiled module, "" when always; the line of the
    ``torch.compile`` in the helper). Empty when the function compiles nothing it returns, or when
    its ``return`` statements disagree on a position."""
    fn = ctx.helper(call)
    if fn is None:
        return {}
    nodes = list(walk_local(fn.body))
    compiled: dict[str, ast.Assign] = {}  # name -> the assignment binding it to torch.compile(...)
    for n in nodes:
        if (
            isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and ctx.call_qualname(n.value) == COMPILE
        ):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    compiled[t.id] = n
    if not compiled:
        return {}
    returns = [n for n in nodes if isinstance(n, ast.Return)]
    if not returns or any(r.value is None for r in returns):
        return {}
    out: dict[int | None, tuple[str, int]] = {}
    for r in returns:
        value = r.value
        items: list[tuple[int | None, ast.expr]] = []
        if isinstance(value, ast.Tuple):
            items.extend(enumerate(value.elts))
        elif value is not None:
            items.append((None, value))
        here = {pos: e.id for pos, e in items if isinstance(e, ast.Name) and e.id in compiled}
        if len(returns) > 1 and out and set(here) != set(out):
            return {}
        for pos, name in here.items():
            at = compiled[name]
            if _rebound_after(nodes, name, at, r):
                continue
            out[pos] = (gate_of(ctx, at) or "", at.lineno)
    return out


def _rebound_after(nodes: list[ast.AST], name: str, compiled: ast.Assign, ret: ast.Return) -> bool:
    """``name`` is bound again between the compile and the return to something other than a method
    result of itself (``net = net.cuda()`` keeps it; ``net = build(args)`` does not)."""
    start, end = compiled.lineno, ret.lineno
    for n in nodes:
        if n is compiled or not isinstance(n, ast.Assign) or not (start < n.lineno < end):
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in n.targets):
            value = n.value
            if not (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and dotted(value.func.value) == name
            ):
                return True
    return False
