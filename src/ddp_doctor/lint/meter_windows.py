"""Meters whose cross-rank sync leaves part of what they report this rank's own.

The torchvision-references ``SmoothedValue`` (copied by DETR, DeiT, MAE, BEiT and most of their
descendants) keeps a window of recent values in a deque beside a running ``count`` and ``total``;
its ``synchronize_between_processes`` all-reduces the count and the total only ("does not
synchronize the deque"). After it ``global_avg`` is global, while ``avg``, ``median``, ``max`` and
``value`` still read this rank's deque. Which statistics stay local is read from the project's own
class, never assumed: the properties that read state the class's other methods feed and its sync
method does not write. A sync that rebuilds the deque (or a property reading only the reduced
count and total) leaves nothing local.

A container (``MetricLogger``) whose sync calls the same method on each meter it holds reports
through its meters: its methods that read a local statistic of the meters it iterates
(``latest_meter`` reading ``getattr(meter, "value")``) are local too.

Class facts, read from the class's own tree; the project index records them on the class's
:class:`~ddp_doctor.lint.project_summary.Summary` and answers ``sync_windows`` from them.
"""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext, dotted, walk_local
from ddp_doctor.lint.reductions import combines_ranks, is_reduce

# What changes a container attribute in place (``self.deque.append(value)``): it is written.
_MUTATORS = frozenset({"append", "appendleft", "extend", "add", "update", "insert", "clear", "pop", "fill_"})


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {b.name: b for b in cls.body if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _is_property(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        dotted(d) in ("property", "functools.cached_property", "cached_property") for d in fn.decorator_list
    )


def _self_attr(node: ast.AST) -> str | None:
    """``x`` of ``self.x`` (also the base of ``self.x[i]`` / ``self.x.y``)."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return node.attr
        node = node.value
    return None


def _self_written(fn: ast.AST) -> set[str]:
    """The ``self`` attributes a method writes: assigned (``self.count = int(t[0])``, ``self.total +=
    v``) or changed in place (``self.deque.append(v)``)."""
    out: set[str] = set()
    for n in walk_local(fn):
        targets: list[ast.expr] = []
        if isinstance(n, ast.Assign):
            targets = n.targets
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            targets = [n.target]
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MUTATORS:
            targets = [n.func.value]
        for t in targets:
            for e in t.elts if isinstance(t, ast.Tuple) else [t]:
                if (a := _self_attr(e)) is not None:
                    out.add(a)
    return out


def _self_read(fn: ast.AST) -> set[str]:
    return {
        n.attr
        for n in walk_local(fn)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
    }


def _combines_itself(ctx: FileContext, fn: ast.AST, name: str) -> bool:
    """The method calls a collective of its own (``dist.all_reduce(t)``), not only the method of the
    same name of the meters it holds (a container's delegation)."""
    for n in walk_local(fn):
        if not isinstance(n, ast.Call):
            continue
        if isinstance(n.func, ast.Attribute) and n.func.attr == name:
            continue
        if combines_ranks(ctx.call_qualname(n) or "", dotted(n.func) or ""):
            return True
    return False


def sync_windows(ctx: FileContext, cls: ast.ClassDef) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """For each method of ``cls`` named like a sync (``synchronize_between_processes``, ``all_reduce``)
    that combines across ranks itself: the properties that still read this rank's own state after it
    (``SmoothedValue``: ``("synchronize_between_processes", ("avg", "max", "median", "value"))``); an
    empty tuple when the sync covers every statistic."""
    methods = _methods(cls)
    props = {n for n, fn in methods.items() if _is_property(fn)}
    written = {n: _self_written(fn) for n, fn in methods.items()}
    out: list[tuple[str, tuple[str, ...]]] = []
    for name, fn in methods.items():
        if name in props or not is_reduce(name) or not _combines_itself(ctx, fn, name):
            continue
        # what the other methods feed (``update``), less what the sync writes back combined
        fed = set().union(*(w for m, w in written.items() if m not in (name, "__init__") and m not in props))
        local = fed - written[name]
        out.append((name, tuple(sorted(p for p in props if _self_read(methods[p]) & local))))
    return tuple(out)


def _iterated_from_self(fn: ast.AST) -> set[str]:
    """Loop variables of ``fn`` that walk something of ``self`` (``for name, meter in
    self.meters.items():``): the meters a container holds."""
    out: set[str] = set()
    for n in walk_local(fn):
        if isinstance(n, (ast.For, ast.comprehension)) and _self_attr(
            n.iter.func if isinstance(n.iter, ast.Call) else n.iter
        ):
            out |= {x.id for x in ast.walk(n.target) if isinstance(x, ast.Name)}
    return out


def delegated_syncs(cls: ast.ClassDef) -> tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...]:
    """For each sync-named method of a container that calls the same method on what it holds
    (``for meter in self.meters.values(): meter.synchronize_between_processes()``): the container's
    other methods with the attributes they read of the meters they iterate (``latest_meter``:
    ``getattr(meter, "value")``; ``summary(mode="avg")``: ``getattr(meter, mode)``, by the default)."""
    methods = _methods(cls)
    reads: dict[str, tuple[str, ...]] = {}
    out = []
    for name, fn in methods.items():
        if not is_reduce(name) or not any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == name
            and not _self_attr(n.func.value)
            and not (isinstance(n.func.value, ast.Name) and n.func.value.id == "self")
            for n in walk_local(fn)
        ):
            continue
        if not reads:
            reads = {m: _element_reads(f) for m, f in methods.items() if m != name and not m.startswith("__")}
        out.append((name, tuple((m, r) for m, r in reads.items() if r)))
    return tuple(out)


def _element_reads(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    held = _iterated_from_self(fn)
    if not held:
        return ()
    defaults = _string_defaults(fn)
    out: set[str] = set()
    for n in walk_local(fn):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in held:
            out.add(n.attr)
        elif (
            isinstance(n, ast.Call)
            and dotted(n.func) == "getattr"
            and len(n.args) >= 2
            and isinstance(n.args[0], ast.Name)
            and n.args[0].id in held
        ):
            key = n.args[1]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                out.add(key.value)
            elif isinstance(key, ast.Name) and key.id in defaults:
                out.add(defaults[key.id])  # ``getattr(meter, mode)`` with ``mode="avg"``
    return tuple(sorted(out))


def _string_defaults(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, str]:
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return {a.arg: d.value for a, d in pairs if isinstance(d, ast.Constant) and isinstance(d.value, str)}
