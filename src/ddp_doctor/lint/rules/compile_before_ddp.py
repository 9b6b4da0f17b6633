"""compile-before-ddp: ``torch.compile`` applied to a model that is then wrapped in DDP.

Both orders work (torch docs, "torch.compile with DDP"); compiling the DDP-wrapped model lets
DDPOptimizer split graphs at bucket boundaries so communication overlaps compute. Info only.
Detected: ``DDP(torch.compile(m))``, ``m = torch.compile(m); DDP(m)`` and ``m.compile(); DDP(m)``
in the same function, compile first in source order; in project mode also a compile hidden in a
project function or method that returns ``torch.compile`` of its argument (VAR
``m = args.compile_model(m, args.tfast)``; config-gated by the flag argument it obeys), and a
same-file helper that builds the model, compiles it (behind its own flag) and returns it, alone or
in a tuple (CBIM ``net, ema_net = init_network(args)``; ``rules/_compiled_returns.py``), and a wrap
through a project function that returns DDP of the model it is handed (nanoVLM ``wrap_model(model)``). The compiled
module is followed through calls that return it (``DDP(m.to(device))``, ``m = m.cuda()``,
``m = SyncBatchNorm.convert_sync_batchnorm(m)``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from typing import Any

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.context import FileContext, dotted, method
from ddp_doctor.lint.flags import gate_of
from ddp_doctor.lint.idioms import DDP
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.module_moves import unmoved
from ddp_doctor.lint.rules._compiled_returns import compiled_positions
from ddp_doctor.lint.rules.base import Rule, Violation

COMPILE = "torch.compile"


class CompileBeforeDdp(Rule):
    id = "compile-before-ddp"
    project_facts = frozenset({"compile"})
    flagged = (
        "`DDP(torch.compile(m))`, or `m = torch.compile(m)` / `m.compile()` / a project helper returning "
        "`torch.compile(m)` / a same-file helper that builds, compiles and returns the model (also in a "
        "tuple: `net, ema = init_network(args)`) then `DDP(m)` (also `(DDP if distributed else X)(m)`, `DDP(m.to(device))`, "
        "`m` moved or SyncBatchNorm-converted in between; (project) `m = wrap_model(m)`, a project function "
        "returning DDP of the model it is handed) in one function, on the same branch"
    )
    not_flagged = (
        "compile after wrapping, a runtime choice (`if cfg.compile_first:`), compiling something else"
    )
    required = (("compile",), ("DistributedDataParallel",))
    # the compile may be hidden in a project helper (``args.compile_model(m, fast)``)
    required_in_project = required

    def project_words(self, project: Any) -> tuple[str, ...]:
        return project.compiling_names()  # type: ignore[no-any-return]  # ProjectIndex

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        for scope in ctx.scopes():
            compiled: dict[str, int] = {}  # name -> line where it became a compiled module
            compiled_at: dict[str, ast.AST] = {}
            helper_gates: dict[str, str] = {}  # name -> the flag a project compile helper obeys
            events: list[ast.Assign | ast.AnnAssign | ast.Call] = sorted(
                (n for n in ctx.local(scope) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.Call))),
                key=lambda n: (n.lineno, n.col_offset),
            )
            for node in events:
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    via = _compile_helper(ctx, node.value)
                    kept = dotted(unmoved(ctx, node.value, through_syncbn=True))
                    if kept in compiled:  # ``m = m.to(device)``: still the compiled module
                        for t in targets:
                            if name := dotted(t):
                                compiled[name] = compiled[kept]
                                compiled_at[name] = compiled_at[kept]
                                if kept in helper_gates:
                                    helper_gates[name] = helper_gates[kept]
                    elif ctx.call_qualname(node.value) == COMPILE or via is not None:
                        for t in targets:
                            if name := dotted(t):
                                compiled[name] = node.lineno
                                compiled_at[name] = node
                                if via:
                                    helper_gates[name] = via
                    elif positions := compiled_positions(ctx, node.value):
                        # a same-file helper that builds and compiles the model it returns
                        # (``net, ema = init_network(args)``), possibly behind its own flag
                        for pos, t in _unpacked(targets):
                            if pos in positions and (name := dotted(t)):
                                gate, compiled[name] = positions[pos]  # the compile's line, in the helper
                                compiled_at[name] = node
                                if gate:
                                    helper_gates[name] = gate
                    elif not _is_wrap(ctx, node.value):
                        for t in targets:  # rebinding to something else forgets it
                            compiled.pop(dotted(t) or "", None)
                elif isinstance(node, ast.Call):
                    m = method(node)
                    if m and m[1] == "compile" and m[0] and ctx.qualname(node.func) is None:
                        compiled[m[0]] = node.lineno
                        compiled_at[m[0]] = node
                    if _is_wrap(ctx, node) and node.args:
                        arg = unmoved(ctx, node.args[0], through_syncbn=True)
                        line = (
                            arg.lineno
                            if isinstance(arg, ast.Call) and ctx.call_qualname(arg) == COMPILE
                            else compiled.get(dotted(arg) or "")
                        )
                        if line is None:
                            continue
                        at = compiled_at.get(dotted(arg) or "")
                        gated_by = helper_gates.get(dotted(arg) or "") or None
                        if not _same_branch(ctx, at, node):
                            # compile behind its own config flag (nanoGPT ``if compile:``, then
                            # ``if ddp:``): compile-before-DDP whenever that flag is on -- unless
                            # the scope also compiles after the wrap (the flag picks the order)
                            gated_by = _compile_gate(ctx, at, node)
                            if gated_by is None or any(
                                isinstance(n, ast.Call)
                                and ctx.call_qualname(n) == COMPILE
                                and n.lineno > node.lineno
                                for n in ctx.local(scope)
                            ):
                                continue
                        yield self.violation(
                            node,
                            Text(
                                f"torch.compile (line {line}) is applied before DDP wrapping (line "
                                f"{node.lineno}); both orders work, compiling the DDP model overlaps communication.",
                                f"torch.compile（第 {line} 行）在 DDP 包装（第 {node.lineno} 行）之前；两种顺序都可以。",
                            ),
                            gated_by=gated_by,
                            compile_line=line,
                            ddp_line=node.lineno,
                        )


def _is_wrap(ctx: FileContext, call: ast.Call) -> bool:
    """``DDP(m, ...)``, or (project) a call of a project function that wraps the model it is handed in
    DDP and returns it (nanoVLM ``model = wrap_model(model)``); not one wrapping a model it builds."""
    if ctx.call_qualname(call) == DDP:
        return True
    project = ctx.project
    if project is None or not call.args:
        return False
    s = project.summary_for(ctx, call.func)
    return s is not None and s.returns_ddp and s.wraps_param and not s.wraps_built and not s.fsdp_only


def _unpacked(targets: Sequence[ast.expr]) -> list[tuple[int | None, ast.expr]]:
    """``a, b = ...`` -> [(0, a), (1, b)]; ``m = ...`` -> [(None, m)]."""
    out: list[tuple[int | None, ast.expr]] = []
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.List)):
            out.extend(enumerate(t.elts))
        else:
            out.append((None, t))
    return out


def _compile_helper(ctx: FileContext, call: ast.Call) -> str | None:
    """Project mode: ``call`` returns ``torch.compile`` of its argument through a project function
    or method (VAR ``args.compile_model(m, args.tfast)``). Returns the gate text when a flag
    argument decides (``args.tfast`` enables compile in `compile_model`), "" when it always
    compiles, None when the call does not compile."""
    project = ctx.project
    if project is None:
        return None
    found = project.call_compiles(ctx, call)
    if found is None:
        return None
    model, flag = found
    if model >= len(call.args):
        return None
    name = (dotted(call.func) or "").split(".")[-1]
    if flag is not None and flag < len(call.args):
        return f"`{ctx.segment(call.args[flag])}` enables compile in `{name}`"
    return ""


def _same_branch(ctx: FileContext, compiled: ast.AST | None, wrap: ast.AST) -> bool:
    """Every ``if`` around the compile also surrounds the DDP wrap: the order does not hang on a
    runtime flag (``if cfg.compile == "before_ddp": ...`` is a choice, not a finding)."""
    if compiled is None:
        return True  # compiled inline: DDP(torch.compile(m))
    wrap_parents = set()
    cur = ctx.parents.get(wrap)
    while cur is not None:
        wrap_parents.add(id(cur))
        cur = ctx.parents.get(cur)
    cur = ctx.parents.get(compiled)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(cur, (ast.If, ast.IfExp, ast.Try, ast.Match)) and id(cur) not in wrap_parents:
            return False
        cur = ctx.parents.get(cur)
    return True


def _compile_gate(ctx: FileContext, compiled: ast.AST | None, wrap: ast.AST) -> str | None:
    """The config flag of the ``if`` that holds the compile but not the wrap, when that ``if`` is a
    configuration flag (a function parameter such as ``compile_first`` is a caller's choice)."""
    if compiled is None:
        return None
    wrap_parents = set()
    cur = ctx.parents.get(wrap)
    while cur is not None:
        wrap_parents.add(id(cur))
        cur = ctx.parents.get(cur)
    gate = gate_of(ctx, compiled)
    child, cur = compiled, ctx.parents.get(compiled)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(cur, (ast.IfExp, ast.Try, ast.Match)) and id(cur) not in wrap_parents:
            return None
        if isinstance(cur, ast.If) and id(cur) not in wrap_parents and child not in cur.body:
            return None  # compiled in an else branch: a choice between orders
        child, cur = cur, ctx.parents.get(cur)
    return gate
