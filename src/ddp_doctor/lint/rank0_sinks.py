"""Log sinks that exist on rank 0 only because they are built under a rank-0 test.

``if rank == 0: writer = SummaryWriter(...)`` (else ``None``), also on ``self`` and behind a flag
the class keeps (rsl_rl's ``Logger``: ``self.disable_logs = is_distributed and gpu_global_rank !=
0``, then ``if self.log_dir is not None and not self.disable_logs: self.writer =
SummaryWriter(...)``; ``self.writer = None`` otherwise). Whatever goes through such a sink is
written by rank 0 alone, whatever method of the class writes it (``if self.writer is not None:
self.writer.add_scalar("Loss/...", value)``). One reading, shared by file mode
(``rules/rank0_only_loss_log.py``) and project mode (``project_bindings.py``), which keeps the
names project-wide.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from ddp_doctor.lint.context import FileContext, dotted, init_of
from ddp_doctor.lint.rank0 import (
    LOG_CALL,
    LOG_SINK,
    class_flags,
    enclosing_rank0_if,
    is_log_call,
    is_log_sink,
    is_not_rank0_test,
    is_rank0_test,
    rank_zero_decorated,
)

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def guarded_sink_names(ctx: FileContext, predicates: Collection[str]) -> set[str]:
    """Last parts of the names this file binds to a new log sink inside the body of a rank-0 test
    (the class's own flags count as tests in its methods)."""
    return sink_names(ctx, predicates)[0]


def rank0_sink_classes(ctx: FileContext, predicates: Collection[str]) -> set[str]:
    """Top-level classes of the file whose instances write on rank 0 only. An instance is a rank-0
    sink wherever it is built:

    - a subclass of a log sink (Ultra-Fast-Lane-Detection's ``class DistSummaryWriter(SummaryWriter)``)
      whose every write method it overrides (``add_*`` and the log calls) runs on rank 0 only
      (``def add_scalar(self, *args, **kwargs): if can_log(): super().add_scalar(*args, **kwargs)``);
    - a class named as a writer or logger whose log methods (``log``, ``info``, ``write``, ...; at
      least one) all run on rank 0 only: a body under one rank-0 test, or decorated to
      (pytorch_trainer's ``CSVLogger`` with ``@rank_zero_only def log(self, name, value)``); any other
      class with a log method only when all its public methods run on rank 0 only (not OpenRLHF's
      ``DeepspeedStrategy``, whose ``print`` is rank 0's but whose ``backward`` is every rank's);
    - a wrapper that forwards every attribute call on rank 0 only (physicsnemo's
      ``RankZeroLoggingWrapper``: ``__getattr__`` returning ``def wrapper(*a, **k): if
      self.dist.rank == 0: return attr(*a, **k)``)."""
    out: set[str] = set()
    for cls in ctx.tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        methods = [f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if any(f.name == "__getattr__" and _forwards_on_rank0_only(f, predicates) for f in methods):
            out.add(cls.name)
            continue
        if any(LOG_SINK.search(dotted(b) or "") for b in cls.bases):
            writes = [f for f in methods if f.name.startswith("add_") or LOG_CALL.match(f.name)]
        elif LOG_SINK.search(cls.name):  # ``class CSVLogger``: its log methods are what it is for
            writes = [f for f in methods if LOG_CALL.match(f.name)]
        else:
            # any other class only when everything it offers runs on rank 0 only: OpenRLHF's
            # ``DeepspeedStrategy`` has a rank-0 ``print`` beside ``backward`` and ``all_reduce``
            writes = [f for f in methods if not f.name.startswith("_")]
            if not any(LOG_CALL.match(f.name) for f in writes):
                continue
        if writes and all(_runs_on_rank0_only(f, predicates) for f in writes):
            out.add(cls.name)
    return out


def _runs_on_rank0_only(fn: ast.FunctionDef | ast.AsyncFunctionDef, predicates: Collection[str]) -> bool:
    """The method is decorated to run on rank 0 only, or its whole body (after its docstring) is one
    ``if <rank-0 test>:`` with no else."""
    if rank_zero_decorated(fn):
        return True
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return (
        len(body) == 1
        and isinstance(body[0], ast.If)
        and not body[0].orelse
        and is_rank0_test(body[0].test, predicates)
    )


def _forwards_on_rank0_only(
    getattr_fn: ast.FunctionDef | ast.AsyncFunctionDef, predicates: Collection[str]
) -> bool:
    """``__getattr__`` builds a function that calls what it looked up only under a rank-0 test (the
    other branch returns nothing) and returns it."""
    for inner in ast.walk(getattr_fn):
        if inner is getattr_fn or not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = [s for s in inner.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if (
            len(body) == 1
            and isinstance(body[0], ast.If)
            and is_rank0_test(body[0].test, predicates)
            and all(_returns_nothing(s) for s in body[0].orelse)
            and any(isinstance(n, ast.Call) for s in body[0].body for n in ast.walk(s))
        ):
            return True
    return False


def _returns_nothing(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Pass) or (
        isinstance(stmt, ast.Return)
        and (stmt.value is None or (isinstance(stmt.value, ast.Constant) and stmt.value.value is None))
    )


def sink_names(ctx: FileContext, predicates: Collection[str]) -> tuple[set[str], set[str]]:
    """Last parts of the names this file binds to a new log sink, (under a rank-0 test, elsewhere);
    an instance of a rank-0-only writer class of the file (:func:`rank0_sink_classes`) is guarded."""
    guarded: set[str] = set()
    everywhere: set[str] = set()
    flags: dict[int, set[str]] = {}
    own = rank0_sink_classes(ctx, predicates)
    for node in ctx.of_type(ast.Assign):
        if not is_log_sink(node.value):
            continue
        if (
            isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id in own
        ):
            guarded |= _target_names(node)
            continue
        cls = ctx.enclosing_method_class(node)
        local = set(predicates)
        if cls is not None:
            if id(cls) not in flags:
                flags[id(cls)] = class_flags(cls, predicates)
            local |= flags[id(cls)]
        names = _target_names(node)
        if _inits_wandb_run(node.value):
            names.add("wandb")
        if enclosing_rank0_if(ctx.parents, node, _SCOPES, local) is not None:
            guarded |= names
        else:
            everywhere |= names
    for expr in ctx.of_type(ast.Expr):
        # a bare ``wandb.init(...)`` under a rank-0 test (jwarczynski/transformer's ``if rank == 0:
        # wandb.init(project=...)``) starts the run the module-level ``wandb.log`` writes to on rank 0
        # only; one started on every rank (or a ``mode="disabled"`` one off rank 0) makes it everyone's
        if _inits_wandb_run(expr.value):
            local = set(predicates)
            cls = ctx.enclosing_method_class(expr)
            if cls is not None:
                local |= flags.setdefault(id(cls), class_flags(cls, predicates))
            if enclosing_rank0_if(ctx.parents, expr, _SCOPES, local) is not None:
                guarded.add("wandb")
            else:
                everywhere.add("wandb")
    return guarded, everywhere


def _inits_wandb_run(value: ast.AST) -> bool:
    """``wandb.init(...)``: it starts the process's global run, which ``wandb.log`` writes to."""
    return isinstance(value, ast.Call) and dotted(value.func) == "wandb.init"


def _target_names(node: ast.Assign) -> set[str]:
    """Last parts of the names an assignment binds, also unpacked (ImbalancedSSL's ``log_writer,
    cfg_logger, train_logger, ... = create_logger(args)`` under ``if is_main_process():``)."""
    out: set[str] = set()
    for target in node.targets:
        for t in target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]:
            if (d := dotted(t)) is not None:
                out.add(d.split(".")[-1])
    return out


def attached_writer_classes(ctx: FileContext) -> dict[str, str]:
    """Top-level classes that hold no writer until one of their methods attaches it (UNITER's
    ``TensorboardLogger``: ``self._logger = None`` in ``__init__``, ``def create(self, path):
    self._logger = SummaryWriter(path)``, every write going through ``self._logger`` or a no-op
    while it is None): class name -> the attaching method's name. An instance writes only in the
    processes that call that method, so one the project attaches on rank 0 only (``if rank == 0:
    TB_LOGGER.create(...)``, checked by the index) is a rank-0 sink."""
    out: dict[str, str] = {}
    for cls in ctx.tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        init = init_of(cls)
        if init is None:
            continue
        methods = [
            f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f is not init
        ]
        own = {f"self.{f.name}" for f in methods}
        for attr in _none_in_init(init):
            attaching = [f for f in methods if _stores_self(f, attr)]
            if (
                len(attaching) == 1
                and _attaches_sink(attaching[0], attr)
                and all(_writes_through(f, attr, own) for f in methods if f is not attaching[0])
            ):
                out[cls.name] = attaching[0].name
                break
    return out


def _none_in_init(init: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """Attributes ``__init__`` sets to None (``self._logger = None``)."""
    return [
        t.attr
        for s in init.body
        if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and s.value.value is None
        for t in s.targets
        if isinstance(t, ast.Attribute) and dotted(t.value) == "self"
    ]


def _stores_self(fn: ast.AST, attr: str) -> bool:
    return any(
        isinstance(n, ast.Attribute)
        and n.attr == attr
        and dotted(n.value) == "self"
        and isinstance(n.ctx, ast.Store)
        for n in ast.walk(fn)
    )


def _attaches_sink(fn: ast.AST, attr: str) -> bool:
    """Every store of ``self.<attr>`` in ``fn`` is a new log sink (``SummaryWriter(path)``)."""
    stores = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and any(dotted(t) == f"self.{attr}" for t in n.targets)
    ]
    return bool(stores) and all(len(s.targets) == 1 and is_log_sink(s.value) for s in stores)


def _writes_through(fn: ast.AST, attr: str, own: set[str]) -> bool:
    """Every log call of ``fn`` writes through ``self.<attr>`` or calls one of the class's own
    methods (``self.log_scaler_dict(value)`` for a nested dict): without that writer the method
    writes nothing."""
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and is_log_call(n):
            name = dotted(n.func) or ""
            if not name.startswith(f"self.{attr}.") and name not in own:
                return False
    return True


def is_null_writer(cls: ast.ClassDef) -> bool:
    """Every method of the class but ``__init__`` does nothing, and it has at least one: a writer
    built for the ranks that must not write (tape's ``DummyVisualizer``: ``def log_metrics(self, ...):
    pass``; CenterNet's ``EmptySummaryWriter``)."""
    methods = [
        f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name != "__init__"
    ]
    return bool(methods) and all(all(_does_nothing(s) for s in f.body) for f in methods)


def _does_nothing(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True  # a docstring, ``...``
    return _returns_nothing(stmt)


def null_off_rank0_returns(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
    """``if local_rank not in (-1, 0): return DummyVisualizer(...)`` (or ``if distributed_rank > 0:``)
    in a factory whose other returns build something else: the calls returned where the test holds
    off rank 0 only, when the function returns something else too."""
    out: list[ast.Call] = []
    for stmt in fn.body:
        if not isinstance(stmt, ast.If) or not is_not_rank0_test(stmt.test):
            continue
        returned = [s.value for s in stmt.body if isinstance(s, ast.Return)]
        out += [v for v in returned if isinstance(v, ast.Call)]
    others = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Call) and n.value not in out
    ]
    return out if others else []
