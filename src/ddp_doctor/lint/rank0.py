"""Which code runs on rank 0 only, and which calls log: shared by rank0-only-loss-log and project mode.

A test is a rank-0 test when it is true on (at most) one rank: ``rank == 0``, ``RANK in {-1, 0}``
(-1 = not distributed), ``dist.get_rank() == 0``, ``master_process``, ``is_main_process()``,
``fabric.is_global_zero``; ``a and <rank-0 test>``; and ``not <flag> or <rank-0 test>``
(llama-recipes: ``if not enable_fsdp or rank == 0`` is rank 0 whenever training is sharded).
What is compared decides, not the spelling of the test: an operand that names a rank or the GPU a
process drives (``gpu == 0`` under ``mp.spawn``, ``opt['rank'] == 0``), a function whose every
return is such a test (``def is_main(): return dist.get_rank() == 0``), and an early exit
(``if rank != 0: continue``) that leaves only rank 0 running the statements after it.
Spellings live in ``lint/idioms.py``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable

from ddp_doctor.lint.context import (
    FileContext,
    conjuncts,
    dotted,
    keyword,
    param_defaults,
    parameter_names,
    positional_params,
    walk_local,
)
from ddp_doctor.lint.dist_tests import asks_if_distributed
from ddp_doctor.lint.idioms import (
    DDP,
    GPU_NAME,
    LOGGER_NAME,
    MAIN_FLAG,
    PROCESS_TEST,
    QUIET_LEVELS,
    RANK0_DECORATOR,
    RANK0_FUNCTION,
    RANK0_MEMBERS,
    RANK0_METHODS,
    RANK0_STATE,
    RANK_NAME,
    RANK_NUMBER,
    TRACKER_LOG_FUNCTIONS,
)

LOGGER_FACTORY_VERBS = frozenset(
    {"get", "setup", "set", "create", "build", "init", "make", "configure", "new", "add"}
)
LOG_CALL = re.compile(
    r"^(print|log|info|debug|warning|log_metrics?|log_dict|add_scalars?|set_postfix(_str)?|"
    r"set_description|write|log_every|to_csv|to_json|to_excel)$"
)
# pandas table writers: what they log is the table they are called on (``log.to_csv(path)``)
TABLE_WRITERS = frozenset({"to_csv", "to_json", "to_excel"})
LOGGER_WORDS = frozenset({"log", "logger", "logging"})
LOGGER_RECORDS = frozenset({"debug", "info", "warning", "warn"})
LOG_ATTRS = frozenset({"desc", "postfix"})  # tqdm: ``pbar.desc = f"... {loss}"``


def is_log_call(call: ast.Call) -> bool:
    name = dotted(call.func)
    if not name:
        # ``neptune_run["train/loss"].log(value)``, ``loggers[0].info(msg)``: a log method of an item
        func = call.func
        return (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Subscript)
            and bool(LOG_CALL.match(func.attr))
            and func.attr not in TABLE_WRITERS
            and func.attr != "write"
        )
    if LOG_CALL.match(name.split(".")[-1]):
        return True
    if _tracker_function(name):
        return True
    if call.args and _calls_a_logger(name.split(".")[-1]):
        return True
    # ``logger.log_string(...)``, ``epoch_logger.log_stats(...)``: a ``log_*`` method of an object
    # whose name says it is a logger (not ``F.log_softmax``, ``dist.log_prob``: math on a module)
    receiver, _, last = name.rpartition(".")
    return last.startswith("log_") and bool(receiver) and _names_a_logger(receiver.split(".")[-1])


def _tracker_function(name: str) -> bool:
    """``fitlog.add_loss(value, ...)``: a tracker module's function that records its argument (the
    module by its import name; ``tf.losses.add_loss`` or a Keras ``self.add_loss`` is no record)."""
    receiver, _, last = name.rpartition(".")
    return last in TRACKER_LOG_FUNCTIONS.get(receiver.split(".")[-1], frozenset())


def _calls_a_logger(held: str) -> bool:
    """``main_logger(msg)`` / ``self.printer(msg)``: an object called as a function whose name ends in
    logger/printer (MM_SLT's ``Logger`` with a ``__call__`` that prints and appends to log.txt), not a
    factory (``setup_logger(cfg)``, ``get_logger(name)``)."""
    words = re.sub(r"([a-z])([A-Z])", r"\1_\2", held).lower().split("_")
    return words[-1] in ("logger", "printer") and words[0] not in LOGGER_FACTORY_VERBS


def _names_a_logger(held: str) -> bool:
    """``logger``, ``Log_file``, ``train_logger``: a name with "log"/"logger"/"logging" as a word."""
    words = set(re.sub(r"([a-z])([A-Z])", r"\1_\2", held).lower().split("_"))
    return bool(words & LOGGER_WORDS)


def is_rank0_log_call(call: ast.Call) -> bool:
    """A call that logs on rank 0 only by itself (``fabric.print``, ``print0``, ``print_rank_0``)."""
    name = dotted(call.func)
    if not name:
        return False
    receiver, _, last = name.rpartition(".")
    if receiver:
        methods = RANK0_METHODS.get(receiver.split(".")[-1].lower())
        if methods is not None and last in methods:
            return True
    return bool(RANK0_FUNCTION.match(last))


def _mentions_rank(node: ast.AST) -> bool:
    names = [d for n in ast.walk(node) if (d := dotted(n)) is not None]
    strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    if RANK_NAME.search(" ".join(names + strings)):
        return True
    # the GPU index a spawned process drives is its local rank: ``args.gpu == 0``, ``opt["gpu_id"]``
    return any(GPU_NAME.match(w.split(".")[-1]) for w in names + strings)


def _rank_alias(node: ast.AST, predicates: Collection[str]) -> bool:
    """``node`` reads a name the file uses as the rank, whatever it is called (``=name`` entries of
    ``predicates``, from ``rank_aliases``)."""
    return any(f"={d}" in predicates for n in ast.walk(node) if (d := dotted(n)) is not None)


SPAWNERS = frozenset({"spawn", "start_processes"})


def rank_aliases(ctx: FileContext) -> set[str]:
    """Names that hold the rank by their role, not their spelling, as ``=name`` predicates: a name
    handed to ``init_process_group(..., rank=name)``, the first parameter of a function of the
    file handed to ``mp.spawn``/``start_processes`` (the process index it is called with:
    ``main_worker(worker_idx, ...)``; the local rank), and the one device a DDP wrap or
    ``torch.cuda.set_device`` is handed (the local rank, one GPU per process)."""
    out: set[str] = set()
    functions = ctx.functions
    for call in ctx.of_type(ast.Call):
        last = (dotted(call.func) or "").rsplit(".", 1)[-1]
        # the DDP wrap under any import name (``... import DistributedDataParallel as NativeDDP``)
        wrap = ctx.call_qualname(call) == DDP or last in ("DistributedDataParallel", "DDP")
        if last == "init_process_group":
            for k in call.keywords:
                if (
                    k.arg == "rank"
                    and isinstance(k.value, (ast.Name, ast.Attribute))
                    and (d := dotted(k.value))
                ):
                    out.add(f"={d}")
        elif wrap or last == "set_device":
            # the device a process drives is its local rank: ``DDP(model, device_ids=[device_id])``,
            # ``torch.cuda.set_device(gpu_idx)`` (What-changes-you ``if device_id == 0:``)
            given = keyword(call, "device_ids") if wrap else None
            one = (
                given.elts[0]
                if isinstance(given, (ast.List, ast.Tuple)) and len(given.elts) == 1
                else (call.args[0] if not wrap and len(call.args) == 1 else None)
            )
            if isinstance(one, (ast.Name, ast.Attribute)) and (d := dotted(one)):
                out.add(f"={d}")
        elif last in SPAWNERS and call.args and isinstance(call.args[0], ast.Name):
            defs = functions.get(call.args[0].id, [])
            if len(defs) == 1 and (params := positional_params(defs[0])):
                out.add(f"={params[0]}")
    return out


def _rank_number(node: ast.AST, predicates: Collection[str]) -> bool:
    """``node`` is the rank itself: ``rank``, ``args.local_rank``, ``dist.get_rank()``, ``gpu`` (the
    local rank of a spawned process), or a name the file uses as the rank."""
    if isinstance(node, ast.Call):
        if node.args or node.keywords:
            return False
        node = node.func
    if not isinstance(node, (ast.Name, ast.Attribute)) or (name := dotted(node)) is None:
        return False
    last = name.rsplit(".", 1)[-1]
    return bool(RANK_NUMBER.match(last) or GPU_NAME.match(last)) or f"={name}" in predicates


def is_rank_number(node: ast.AST, predicates: Collection[str] = ()) -> bool:
    """``node`` is the rank itself where it is written (``args.rank``, ``local_rank``, ``gpu``, a
    name the file uses as the rank): what a caller hands on as the rank (lint/rank0_handoff.py)."""
    return _rank_number(node, predicates)


def _int(node: ast.AST) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return -inner if inner is not None else None
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def _negated_flag(node: ast.AST) -> bool:
    """``not flag`` / ``flag is None`` / ``rank == -1``: true when not distributed."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return True
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        right = node.comparators[0]
        if isinstance(node.ops[0], ast.Is) and isinstance(right, ast.Constant) and right.value is None:
            return True
        if isinstance(node.ops[0], ast.Eq) and _int(right) == -1:
            return True
    return False


def is_rank0_test(test: ast.expr, predicates: Collection[str] = ()) -> bool:
    """``test`` is true on rank 0 only; ``predicates``: names of functions that return such a test,
    and of flags that hold one in the scope at hand (a parameter every caller binds to a rank-0 test)."""
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And):
            return any(is_rank0_test(v, predicates) for v in test.values)
        rank0 = [v for v in test.values if is_rank0_test(v, predicates)]
        return bool(rank0) and all(v in rank0 or _negated_flag(v) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        # ``not self.disable_logs`` where ``disable_logs = is_distributed and rank != 0``: the
        # negation of a test that holds off rank 0 only (true when not distributed, like ``not
        # distributed or rank == 0``)
        return _not_rank0(test.operand, predicates) or _rank_number(test.operand, predicates)
    if _main_process_state(test):
        return True
    if _exists_on_rank0_only(test, ast.IsNot, predicates):
        return True  # ``if self.wandb_run is not None:`` / ``if self.logger:`` (built on rank 0 only)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(op, ast.Eq):
            return any(
                (_int(b) == 0 or _zero_rank_name(b, predicates))
                and (_mentions_rank(a) or _rank_alias(a, predicates))
                and not _zero_rank_name(a, predicates)  # (0 in every process: true everywhere)
                for a, b in ((left, right), (right, left))
            )
        if isinstance(op, ast.In) and isinstance(right, (ast.Set, ast.List, ast.Tuple)):
            values = {_int(e) for e in right.elts}
            return (
                0 in values
                and values <= RANK0_MEMBERS
                and (_mentions_rank(left) or _rank_alias(left, predicates))
            )
        # rank <= 0, rank < 1 (ColBERT ``config.rank < 1``: -1 when not distributed)
        return (
            (isinstance(op, ast.LtE) and _int(right) == 0) or (isinstance(op, ast.Lt) and _int(right) == 1)
        ) and (_mentions_rank(left) or _rank_alias(left, predicates))
    target = test.func if isinstance(test, ast.Call) else test
    name = dotted(target)
    if not name:
        return False
    last = name.split(".")[-1]
    if isinstance(test, ast.Attribute) and name in predicates:
        return True  # ``self.verbose`` kept from a constructor argument that is a rank-0 test
    return bool(MAIN_FLAG.match(last)) or (isinstance(test, (ast.Call, ast.Name)) and last in predicates)


def _exists_on_rank0_only(test: ast.expr, op: type[ast.cmpop], predicates: Collection[str]) -> bool:
    """``x is not None`` (``op`` IsNot; or ``x`` itself) / ``x is None`` (``op`` Is) where ``x`` is
    an object the caller knows exists on rank 0 only (``?x`` in ``predicates``: a writer or run
    built under a rank-0 test, None elsewhere)."""
    if op is ast.IsNot and isinstance(test, (ast.Name, ast.Attribute)):
        return f"?{dotted(test)}" in predicates
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], op)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
        and isinstance(test.left, (ast.Name, ast.Attribute))
        and f"?{dotted(test.left)}" in predicates
    )


def _main_process_state(test: ast.expr) -> bool:
    """``accelerator.trackers``, ``len(accelerator.trackers) > 0`` (or ``>= 1``, ``!= 0``): state that
    exists on the main process only (``lint/idioms.py`` ``RANK0_STATE``)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], _int(test.comparators[0])
        nonempty = (isinstance(op, (ast.Gt, ast.NotEq)) and right == 0) or (
            isinstance(op, ast.GtE) and right == 1
        )
        if not nonempty:
            return False
        test = test.left
    if isinstance(test, ast.Call) and dotted(test.func) in ("len", "bool") and len(test.args) == 1:
        test = test.args[0]
    name = dotted(test) or ""
    receiver, _, attr = name.rpartition(".")
    return bool(receiver) and attr in RANK0_STATE.get(receiver.split(".")[-1].lower(), frozenset())


def rank0_locals(
    fn: ast.AST,
    nodes: Iterable[ast.AST],
    predicates: Collection[str] = (),
    parents: dict[ast.AST, ast.AST] | None = None,
) -> set[str]:
    """Names ``fn`` binds only to rank-0 tests (``is_tracking = len(accelerator.trackers) > 0``,
    ``log_now = rank == 0``): ``if is_tracking:`` is a rank-0 test. ``nodes``: ``fn``'s own nodes.
    With ``parents``, ``x = True`` in one branch of an ``if`` whose other branch binds ``x`` to a
    rank-0 test counts too: true when not distributed, like ``not distributed or rank == 0``
    (neuraloperator ``setup``: ``is_logger = get_local_rank() == 0`` / ``else: is_logger = True``).
    A flag raised only on rank 0 counts too: ``default_gpu = False`` then ``default_gpu = True``
    only inside ``if <rank-0 test>:`` (or in the single-process ``else`` of ``if local_rank != -1:``;
    vilbert ``train_tasks.py``)."""
    bound: dict[str, bool] = {}
    single: list[tuple[str, ast.Assign]] = []
    lowered: set[str] = set()  # names also bound to False/None: the flag's initial value
    for n in nodes:
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and n.value is not None:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    ok = isinstance(n, ast.Assign) and is_rank0_test(n.value, predicates)
                    if not ok and parents is not None and isinstance(n, ast.Assign) and _is_true(n.value):
                        single.append((t.id, n))
                        continue
                    if not ok and parents is not None and isinstance(n, ast.Assign) and _is_falsy(n.value):
                        lowered.add(t.id)
                        continue
                    bound[t.id] = bound.get(t.id, True) and ok
    raised: set[str] = set()  # flags set True under a rank-0 test
    for name, node in single:
        if name in lowered and bound.get(name, True) and _under_rank0_if(parents or {}, node, predicates):
            raised.add(name)
    for name in raised:
        bound.setdefault(name, True)
    for name, node in single:
        if not bound.get(name):
            continue
        if name in raised and (
            _under_rank0_if(parents or {}, node, predicates) or _in_single_process_branch(parents or {}, node)
        ):
            continue
        if not _other_branch_binds(parents or {}, node, name, predicates):
            bound[name] = False
    for name in lowered - raised:
        if not any(n == name for n, _ in single):
            bound[name] = False  # only ever False/None beside other bindings: no rank-0 flag
    return {k for k, v in bound.items() if v}


def _is_falsy(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and (node.value is False or node.value is None)


def _under_rank0_if(parents: dict[ast.AST, ast.AST], node: ast.AST, predicates: Collection[str]) -> bool:
    """``node`` sits in the body of an ``if <rank-0 test>:`` of its scope."""
    child, cur = node, parents.get(node)
    while cur is not None and not isinstance(cur, SCOPES):
        if isinstance(cur, ast.If) and child in cur.body and is_rank0_test(cur.test, predicates):
            return True
        child, cur = cur, parents.get(cur)
    return False


def _in_single_process_branch(parents: dict[ast.AST, ast.AST], node: ast.AST) -> bool:
    """``node`` sits in the ``else`` of an ``if`` that holds only when distributed
    (``if dist.is_available() and args.local_rank != -1:``): one process runs it."""
    child, cur = node, parents.get(node)
    while cur is not None and not isinstance(cur, SCOPES):
        if isinstance(cur, ast.If) and child in cur.orelse and _distributed_test(cur.test):
            return True
        child, cur = cur, parents.get(cur)
    return False


def _distributed_test(test: ast.expr) -> bool:
    """True only when the run is distributed: ``local_rank != -1`` (-1 = not distributed), alone
    or in an ``and``."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_distributed_test(v) for v in test.values)
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.NotEq)
        and _int(test.comparators[0]) == -1
        and _mentions_rank(test.left)
    )


def _is_true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _is_false(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _other_branch_binds(
    parents: dict[ast.AST, ast.AST], node: ast.Assign, name: str, predicates: Collection[str]
) -> bool:
    """``node`` (``name = True``) sits in one block of an ``if`` whose other block binds ``name`` to a
    rank-0 test."""
    child: ast.AST = node
    cur = parents.get(node)
    while cur is not None and not isinstance(cur, SCOPES):
        if isinstance(cur, ast.If) and child is not cur.test:
            other = cur.orelse if child in cur.body else cur.body
            for stmt in other:
                for n in ast.walk(stmt):
                    if (
                        isinstance(n, ast.Assign)
                        and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
                        and is_rank0_test(n.value, predicates)
                    ):
                        return True
            return False
        child, cur = cur, parents.get(cur)
    return False


def is_not_rank0_test(test: ast.expr, predicates: Collection[str] = ()) -> bool:
    """``test`` is true on every rank but 0: ``rank != 0``, ``rank > 0``, ``not is_main_process()``,
    also as one operand of an ``or`` (``args.silent or local_rank != 0``: whatever else it tests, it
    holds on every other rank)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(is_not_rank0_test(v, predicates) for v in test.values)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        # ``self.distributed and dist.get_rank() > 0`` (``disable=(ddp and rank != 0)``): the other
        # operands ask whether the run is distributed, so in a distributed run it holds on every rank
        # but 0 (not ``step % 10 == 0 and rank != 0``: that one is false on the other ranks too)
        rank_tests = [v for v in test.values if is_not_rank0_test(v, predicates)]
        return bool(rank_tests) and all(
            v in rank_tests or asks_if_distributed(v, ast.unparse(v)) for v in test.values
        )
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return is_rank0_test(test.operand, predicates)
    if isinstance(test, (ast.Name, ast.Attribute)) and f"!{dotted(test)}" in predicates:
        return True  # a flag that holds such a test (``class_flags``: ``self.disable_logs``)
    if _rank_number(test, predicates):
        return True  # ``if args.local_rank: return``: the rank is nonzero on every rank but 0
    if _exists_on_rank0_only(test, ast.Is, predicates):
        return True  # ``if self.writer is None: return`` (built on rank 0 only)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(op, (ast.NotEq, ast.Gt)) and _int(right) == 0:
            return _mentions_rank(left) or _rank_alias(left, predicates)
        if isinstance(op, ast.GtE) and _int(right) == 1:  # rank >= 1
            return _mentions_rank(left) or _rank_alias(left, predicates)
        if isinstance(op, ast.NotIn) and isinstance(right, (ast.Set, ast.List, ast.Tuple)):
            values = {_int(e) for e in right.elts}
            return (
                0 in values
                and values <= RANK0_MEMBERS
                and (_mentions_rank(left) or _rank_alias(left, predicates))
            )
    return False


def class_flags(cls: ast.ClassDef, predicates: Collection[str] = ()) -> set[str]:
    """``self.<attr>`` flags of ``cls`` that every assignment in its methods binds to a rank-0 test
    (``"self.is_main"``), or to a test that holds off rank 0 only (``"!self.disable_logs"``, rsl_rl's
    ``self.disable_logs = is_distributed and gpu_global_rank != 0``): in its methods, ``if
    self.is_main:`` and ``if not self.disable_logs:`` are rank-0 tests. Predicates of that form
    are read by ``is_rank0_test`` / ``is_not_rank0_test``."""
    bound: dict[str, list[ast.expr | None]] = {}
    nodes: dict[str, list[ast.AST]] = {}
    for fn in cls.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for n in ast.walk(fn):
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in targets:
                    if (
                        isinstance(t, ast.Attribute)
                        and isinstance(t.value, ast.Name)
                        and t.value.id == "self"
                    ):
                        # an augmented or annotated-only binding is no test
                        value = n.value if isinstance(n, ast.Assign) else None
                        bound.setdefault(t.attr, []).append(value)
                        nodes.setdefault(t.attr, []).append(n)
    out: set[str] = set()
    parents: dict[ast.AST, ast.AST] | None = None
    for attr, values in bound.items():
        tests = [v for v in values if v is not None]
        if len(tests) != len(values):
            continue
        if any(_is_true(v) for v in tests) and all(_is_true(v) or _is_false(v) for v in tests):
            # ``self.verbose = True`` then ``if dist.get_rank() != 0: self.verbose = False``: lowered
            # on every rank but 0 (true on rank 0 and when not distributed)
            if parents is None:
                parents = {c: p for p in ast.walk(cls) for c in ast.iter_child_nodes(p)}
            lowered = [n for n, v in zip(nodes[attr], values) if v is not None and _is_false(v)]
            if lowered and all(_off_rank0(parents, n, predicates) for n in lowered):
                out.add(f"self.{attr}")
            continue
        if all(is_rank0_test(v, predicates) for v in tests):
            out.add(f"self.{attr}")
        elif all(_not_rank0(v, predicates) for v in tests):
            out.add(f"!self.{attr}")
    return out


def bound_argument(fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, name: str) -> ast.expr | None:
    """What ``call`` passes for ``fn``'s parameter ``name`` (by keyword or position; ``self`` is
    filled by the instance of ``obj.method(...)``); None when it is left to its default or unknown
    (``*args``/``**kwargs``)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    value = next((k.value for k in call.keywords if k.arg == name), None)
    if value is not None:
        return value
    # ``self.run_epoch(...)``: the bound instance fills ``self``
    positional = positional_params(fn, bound=isinstance(call.func, ast.Attribute))
    if name in positional and positional.index(name) < len(call.args):
        return call.args[positional.index(name)]
    return None


def rank0_parameters(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    calls: Iterable[ast.Call],
    predicates: Collection[str],
    parents: dict[ast.AST, ast.AST] | None = None,
) -> set[str]:
    """Parameters of ``fn`` that every one of its ``calls`` binds to a rank-0 test
    (``run_epoch(..., verbose=is_master)``): inside ``fn``, ``if verbose:`` runs on rank 0 only. A call
    that leaves the parameter to its default, or passes ``*args``/``**kwargs``, binds it to something else.
    With ``parents``, a call binding ``True`` in one branch of an ``if`` whose other branch makes a
    call binding a rank-0 test counts too (TabPFN ``init_dist``: ``print_on_master_only(rank == 0)``
    when distributed, ``print_on_master_only(True)`` in the single-process ``else``)."""
    calls = list(calls)
    if not calls:
        return set()
    names = parameter_names(fn)
    out: set[str] = set()
    for name in names:
        bound = [(call, bound_argument(fn, call, name)) for call in calls]
        rank0 = [c for c, v in bound if v is not None and is_rank0_test(v, predicates)]
        if rank0 and all(
            c in rank0 or (parents is not None and _is_true(v) and _beside(parents, c, rank0))
            for c, v in bound
        ):
            out.add(name)
    return out


def _beside(parents: dict[ast.AST, ast.AST], node: ast.AST, others: list[ast.Call]) -> bool:
    """``node`` sits in one block of an ``if`` whose other block holds one of ``others``."""
    child, cur = node, parents.get(node)
    while cur is not None and not isinstance(cur, SCOPES):
        if isinstance(cur, ast.If) and child is not cur.test:
            other = cur.orelse if child in cur.body else cur.body
            inside = {id(n) for stmt in other for n in ast.walk(stmt)}
            return any(id(o) in inside for o in others)
        child, cur = cur, parents.get(cur)
    return False


def rank0_predicates(tree: ast.AST, functions: Iterable[ast.AST] | None = None) -> set[str]:
    """Functions of a file that answer "am I rank 0?": every ``return`` is a rank-0 test
    (``def is_main(): return dist.get_rank() == 0``), however the function is named. ``functions``:
    the file's function definitions when known (no walk of the tree). A ``return True`` under an
    ``if`` is the single-process answer beside the rank test (DDPM-weather ``is_main_gpu``: ``if
    torch.cuda.device_count() < 2: return True``, then ``return dist.get_rank() == 0``): the one
    process is rank 0."""
    out: set[str] = set()
    for fn in ast.walk(tree) if functions is None else functions:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or len(fn.body) > 6:
            continue
        returns = [n for n in walk_local(fn.body) if isinstance(n, ast.Return)]
        tests = [r for r in returns if not _guarded_true(r, fn.body)]
        if tests and all(r.value is not None and is_rank0_test(r.value) for r in tests):
            out.add(fn.name)
    return out


def _guarded_true(ret: ast.Return, body: list[ast.stmt]) -> bool:
    """``ret`` is ``return True`` in the body of a top-level ``if`` that asks about the processes or
    devices (``if not dist.is_initialized():``, ``if torch.cuda.device_count() < 2:``), not about the
    step (``if step % 100 == 0: return True`` makes every rank log then)."""
    return _is_true(ret.value) and any(
        isinstance(stmt, ast.If) and ret in stmt.body and bool(PROCESS_TEST.search(ast.unparse(stmt.test)))
        for stmt in body
    )


def _zero_rank_name(node: ast.AST, predicates: Collection[str]) -> bool:
    """``node`` is a name kept for rank 0's number (``0=name`` predicates, :func:`zero_rank_names`)."""
    return isinstance(node, (ast.Name, ast.Attribute)) and f"0={dotted(node)}" in predicates


def zero_rank_names(assigns: Iterable[ast.Assign], options: Collection[str] = ()) -> set[str]:
    """Names for the rank that logs, as ``0=name`` predicates: a name that says it is a rank, which
    the file only ever sets to the literal 0 (kl-nn's ``self.log_rank = 0`` in ``__init__``, then ``if
    self.gpu_id == self.log_rank:``; a module's ``MASTER_RANK = 0``). Comparing a rank to it is
    comparing it to 0. A command-line option (``options``: the file's argparse destinations) is given
    by the launcher or the user: glow sets ``args.local_rank = 0`` only where no launcher passed
    ``--local_rank``, so it is no constant."""
    verdict: dict[str, bool] = {}
    for node in assigns:
        for t in node.targets:
            name = dotted(t) if isinstance(t, (ast.Name, ast.Attribute)) else None
            if name is None:
                continue
            verdict[name] = verdict.get(name, True) and _int(node.value) == 0
    return {
        f"0={name}"
        for name, ok in verdict.items()
        if ok and RANK_NAME.search(last := name.rsplit(".", 1)[-1]) and last not in options
    }


def rank0_attribute_flags(assigns: Iterable[ast.Assign], predicates: Collection[str] = ()) -> set[str]:
    """Attributes the file sets only to rank-0 tests, outside ``self`` (``args.on_main_process =
    (args.distributed and args.local_rank == 0) or not args.distributed``): the object is handed
    around, and ``if args.on_main_process:`` in any function of the file is a rank-0 test."""
    verdict: dict[str, bool] = {}
    for node in assigns:
        for t in node.targets:
            name = dotted(t) if isinstance(t, ast.Attribute) else None
            if name is None or name.startswith(("self.", "cls.")):
                continue
            verdict[name] = verdict.get(name, True) and is_rank0_test(node.value, predicates)
    return {name for name, ok in verdict.items() if ok}


_EXITS = (ast.Continue, ast.Return, ast.Break)


LOG_SINK = re.compile(r"(Writer|Logger|logger|writer|Tensorboard|tensorboard|Visualizer|^wandb\.init$)")


def is_log_sink(node: ast.AST) -> bool:
    """A call that builds a logger/writer (``SummaryWriter(...)``, ``utils.TensorboardLogger(...)``,
    ``wandb.init(...)``): the objects rank-0-only logging goes through."""
    return isinstance(node, ast.Call) and bool(LOG_SINK.search(dotted(node.func) or ""))


def enclosing_rank0_if(
    parents: dict[ast.AST, ast.AST],
    node: ast.AST,
    scopes: tuple[type[ast.AST], ...],
    predicates: Collection[str] = (),
) -> ast.If | None:
    """The innermost ``if <rank-0 test>:`` whose body (not else) holds ``node``, or an earlier
    ``if <not rank 0>: continue/return`` in an enclosing block, searched up to the nearest
    enclosing node of a ``scopes`` type."""
    child, cur = node, parents.get(node)
    while cur is not None:
        if isinstance(cur, ast.If) and child in cur.body and is_rank0_test(cur.test, predicates):
            return cur
        if isinstance(cur, ast.If) and child in cur.orelse and is_not_rank0_test(cur.test, predicates):
            return cur
        for block in _blocks(cur):
            if child in block:
                for stmt in block[: block.index(child)]:
                    if (
                        isinstance(stmt, ast.If)
                        and stmt.body
                        and isinstance(stmt.body[-1], _EXITS)
                        and is_not_rank0_test(stmt.test, predicates)
                    ):
                        return stmt
        if isinstance(cur, scopes):
            break
        child, cur = cur, parents.get(cur)
    return None


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    return [
        v
        for f in ("body", "orelse", "finalbody")
        if isinstance(v := getattr(node, f, None), list) and v and isinstance(v[0], ast.stmt)
    ]


# Calls a logging setup silences ranks with: a file without any of them silences nothing.
_SETUP_CALLS = ("setLevel", "basicConfig", "disable", "remove", "disabled", "addHandler")


def silences_other_ranks(
    tree: ast.AST, predicates: Collection[str] = (), parents: dict[ast.AST, ast.AST] | None = None
) -> bool:
    """Logging configuration that keeps rank 0's records only: ``logger.setLevel(logging.ERROR)``
    in the else of ``if rank == 0`` (or under ``if rank != 0``), a level chosen by a rank-0 test
    (``level=INFO if rank == 0 else WARN``), ``logging.basicConfig(...)`` called only under a rank-0
    test in its function (the other ranks have no handler and drop ``info`` records), or loguru's ``logger.remove()`` with ``logger.add(...)``
    only under a rank-0 test (YOLOX ``setup_logger``), or ``logger.disabled = True`` off rank 0
    (SwinBERT). Then the plain ``logger.info(...)`` calls of the project log on rank 0 only."""
    if parents is None:
        if not any(isinstance(n, ast.Attribute) and n.attr in _SETUP_CALLS for n in ast.walk(tree)):
            return False
        parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    elif not any(isinstance(n, ast.Attribute) and n.attr in _SETUP_CALLS for n in parents if n is not None):
        return False
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            continue
        calls = [
            n for n in walk_local(fn.body) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        ]
        if any(
            isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Attribute) and t.attr == "disabled" for t in n.targets)
            and isinstance(n.value, ast.Constant)
            and n.value.value is True
            and _off_rank0(parents, n, predicates)
            for n in walk_local(fn.body)
        ):
            return True  # ``if not is_main_process(): logger.disabled = True``
        # ``logger.addHandler(h)`` and ``logger.handlers.append(h)`` (lingua's ``init_logger`` appends its
        # stream handlers on every rank and adds a file handler on rank 0 only: nothing is silenced)
        handlers = [
            c
            for c in calls
            if c.func.attr == "addHandler"  # type: ignore[attr-defined]
            or (dotted(c.func) or "").endswith("handlers.append")
        ]
        if (
            handlers
            and isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            # (an ``if distributed_rank > 0: return logger`` before them counts: enclosing_rank0_if)
            and all(enclosing_rank0_if(parents, c, SCOPES, predicates) is not None for c in handlers)
        ):
            # maskrcnn-benchmark ``setup_logger(name, save_dir, distributed_rank)``: ``if
            # distributed_rank > 0: return logger`` before any handler is added; the other ranks'
            # logger has no handler and drops ``info`` records
            return True
        removes = any(c.func.attr == "remove" and not c.args for c in calls)  # type: ignore[attr-defined]
        configs = [c for c in calls if c.func.attr == "basicConfig"]  # type: ignore[attr-defined]
        if configs and all(enclosing_rank0_if(parents, c, SCOPES, predicates) is not None for c in configs):
            return (
                True  # handlers on rank 0 only (DiT/LlamaGen ``create_logger``): the others drop info records
            )
        for call in calls:
            attr = call.func.attr  # type: ignore[attr-defined]
            if attr in ("setLevel", "basicConfig", "disable"):
                args = [*call.args, *(k.value for k in call.keywords)]
                # ``level = logging.INFO if rank in {-1, 0} else logging.WARNING`` then
                # ``basicConfig(level=level)`` (CBIM's ``configure_logger``): the name's one binding
                args += [
                    v for a in args if isinstance(a, ast.Name) and (v := _only_value(fn, a.id)) is not None
                ]
                if any(
                    isinstance(a, ast.IfExp)
                    and is_rank0_test(a.test, predicates)
                    and _quieter(a.orelse, a.body)
                    for a in args
                ):
                    return True
                if any(_quiet_level(a, fn) for a in args) and _off_rank0(parents, call, predicates):
                    return True
            if (
                attr == "add"
                and removes
                and enclosing_rank0_if(parents, call, SCOPES, predicates) is not None
            ):
                return True
    return False


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _only_value(fn: ast.AST, name: str) -> ast.expr | None:
    """The value of ``name``'s one plain assignment in ``fn``'s own body; None when it has more."""
    found = [
        n.value
        for n in walk_local(fn.body)  # type: ignore[attr-defined]
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        and any(
            isinstance(t, ast.Name) and t.id == name
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        )
    ]
    return found[0] if len(found) == 1 else None


LEVELS = {
    "NOTSET": 0,
    "DEBUG": 10,
    "INFO": 20,
    "WARN": 30,
    "WARNING": 30,
    "ERROR": 40,
    "FATAL": 50,
    "CRITICAL": 50,
}


def _quieter(other: ast.expr, rank0: ast.expr) -> bool:
    """The level set off rank 0 drops more than rank 0's (``INFO if rank == 0 else WARN``); not
    ``INFO if rank in [-1, 0] else INFO`` (CodeExecutor: every rank logs). Unknown levels count."""
    a, b = _level(other), _level(rank0)
    return a is None or b is None or a > b


def _level(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    name = (dotted(node) or "").rsplit(".", 1)[-1]
    return LEVELS.get(name)


def silenced_stdout(
    assigns: Iterable[ast.Assign], parents: dict[ast.AST, ast.AST], predicates: Collection[str] = ()
) -> ast.Assign | None:
    """The statement that takes standard output away from the ranks other than 0: ``sys.stdout =
    open(os.devnull, "w")`` (also ``sys.stdout = sys.stderr = f``) in the body of ``if local_rank !=
    0:`` or the else of a rank-0 test (MONAI's DDP tutorials). Then a plain ``print(...)`` of the file
    shows rank 0's values only. ``assigns``: the file's assignments. None when the file does no such
    thing."""
    for node in assigns:
        if any(dotted(t) == "sys.stdout" for t in node.targets) and _off_rank0(parents, node, predicates):
            return node
        if any(is_builtin_print(t) for t in node.targets) and (
            _off_rank0(parents, node, predicates) or _rank0_only_printer(parents, node, predicates)
        ):
            return node
    return None


def is_builtin_print(node: ast.AST) -> bool:
    """``builtins.print`` / ``__builtin__.print`` (``import builtins as __builtin__``)."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "print"
        and isinstance(node.value, ast.Name)
        and node.value.id.strip("_") in ("builtins", "builtin")
    )


def _rank0_only_printer(
    parents: dict[ast.AST, ast.AST], node: ast.Assign, predicates: Collection[str]
) -> bool:
    """``builtins.print = prt`` where ``prt`` (a function defined beside the assignment) prints only
    under a rank-0 test, possibly or-ed with a force flag (``if is_master or force:``): MAE/DeiT/DETR
    ``setup_for_distributed(is_master)``. ``is_master`` counts as a rank-0 test when it is a parameter
    of the enclosing function that every call of it in the file binds to one (``args.rank == 0``)."""
    if not isinstance(node.value, ast.Name):
        return False
    scope = parents.get(node)
    while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        scope = parents.get(scope)
    if scope is None:
        return False
    top: ast.AST = scope
    while (up := parents.get(top)) is not None:
        top = up
    # beside the assignment, or a module-level def the setup function installs (TopDiG's
    # ``def print_if_rank0(*args): if is_rank_0(): original_print(*args)`` and, in ``main_worker``,
    # ``builtins.print = print_if_rank0``)
    homes = [scope.body] + ([top.body] if isinstance(top, ast.Module) and top is not scope else [])
    printer = next(
        (
            f
            for body in homes
            for f in walk_local(body)
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == node.value.id
        ),
        None,
    )
    if printer is None:
        return False
    tests = set(predicates)
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        module: ast.AST = scope
        while (up := parents.get(module)) is not None:
            module = up
        calls = [
            c
            for c in ast.walk(module)
            if isinstance(c, ast.Call) and (dotted(c.func) or "").split(".")[-1] == scope.name
        ]
        tests |= rank0_parameters(scope, calls, predicates, parents)

    def gate(test: ast.expr) -> bool:
        if isinstance(test, ast.Name) and test.id in tests:
            return True
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            return any(gate(v) for v in test.values)  # ``is_master or force``: the force flag is opt-in
        return is_rank0_test(test, tests)

    # (a call of a rank-0 predicate is the gate's own test: ``if is_rank_0():``)
    prints = [
        c
        for c in walk_local(printer.body)
        if isinstance(c, ast.Call)
        and isinstance(c.func, ast.Name)
        and c.func.id not in (printer.name, *tests)
    ]
    printer_parents = {c: p for p in ast.walk(printer) for c in ast.iter_child_nodes(p)}

    def guarded(call: ast.AST) -> bool:
        child, cur = call, printer_parents.get(call)
        while cur is not None and cur is not printer:
            if isinstance(cur, ast.If) and child in cur.body and gate(cur.test):
                return True
            child, cur = cur, printer_parents.get(cur)
        return False

    # the saved original ``print`` (any call by a bare name) runs only under the gate; a body with no
    # call at all (``def print_pass(*args): pass``) drops everything
    return all(guarded(c) for c in prints)


def is_plain_print(call: ast.Call) -> bool:
    """``print(...)`` to standard output (no ``file=`` other than ``sys.stdout``)."""
    if not (isinstance(call.func, ast.Name) and call.func.id == "print"):
        return False
    target = next((k.value for k in call.keywords if k.arg == "file"), None)
    return target is None or dotted(target) == "sys.stdout"


def _quiet_level(node: ast.AST, fn: ast.AST | None = None) -> bool:
    """``logging.ERROR``, ``"ERROR"``, or a parameter of ``fn`` whose default is one (SAM 2
    ``setup_logging(..., log_level_secondary="ERROR")``)."""
    if isinstance(node, ast.Name) and isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        defaults = param_defaults(fn)
        if node.id in defaults:
            return _quiet_level(defaults[node.id])
    name = dotted(node) or (
        node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
    )
    return name.split(".")[-1].upper() in QUIET_LEVELS


def _off_rank0(parents: dict[ast.AST, ast.AST], node: ast.AST, predicates: Collection[str]) -> bool:
    """``node`` runs on ranks other than 0 only (else of a rank-0 test, body of a not-rank-0 test)."""
    child, cur = node, parents.get(node)
    while cur is not None and not isinstance(cur, SCOPES):
        if isinstance(cur, ast.If):
            if child in cur.orelse and is_rank0_test(cur.test, predicates):
                return True
            if child in cur.body and _not_rank0(cur.test, predicates):
                return True
        child, cur = cur, parents.get(cur)
    return False


def off_rank0_branch(parents: dict[ast.AST, ast.AST], node: ast.AST, predicates: Collection[str]) -> bool:
    """``node`` runs on ranks other than 0 only, as :func:`_off_rank0` reads it, but the ``else`` of an
    ``and`` counts only when its other operands speak of the rank (CenterNet tutorial's ``if
    local_rank is not None and local_rank == 0: ... elif writer is not None:``): the ``else`` of
    ``if self._wandb is not None and is_rank_0():`` runs on rank 0 too (OpenRLHF's TensorBoard
    branch)."""
    child, cur = node, parents.get(node)
    while cur is not None and not isinstance(cur, SCOPES):
        if isinstance(cur, ast.If):
            test = cur.test
            parts = conjuncts(test)
            if (
                child in cur.orelse
                and is_rank0_test(test, predicates)
                # each part holds on every rank 0: not the existence of a rank-0 object (``run is
                # not None``: no run on rank 0 either without ``--wandb``)
                and all(
                    _mentions_rank(v)
                    or (is_rank0_test(v, predicates) and not _exists_on_rank0_only(v, ast.IsNot, predicates))
                    for v in parts
                )
            ):
                return True
            if child in cur.body and _not_rank0(test, predicates):
                return True
        child, cur = cur, parents.get(cur)
    return False


def _not_rank0(test: ast.expr, predicates: Collection[str]) -> bool:
    """``is_not_rank0_test``, also through ``and``/``or``: ``distributed and gpu != 0 or (slurm and
    rank != 0)`` holds off rank 0 only (an ``and`` with one such operand, an ``or`` of such operands)."""
    if isinstance(test, ast.BoolOp):
        check = any if isinstance(test.op, ast.And) else all
        return check(_not_rank0(v, predicates) for v in test.values)
    return is_not_rank0_test(test, predicates)


def is_silenceable_record(call: ast.Call) -> bool:
    """A ``logging`` record that a setup keeping rank 0's records only drops on the other ranks:
    ``logger.info(...)`` / ``debug`` / ``warning`` / ``log(...)`` of a logger — not a project
    logger's ``write``/``print`` (YouReID's ``Logger.write`` writes its file on every rank)."""
    return records_silenceably(call.func)


def records_silenceably(func: ast.expr) -> bool:
    """``func`` is a logger's record method a setup can silence (``logger.info``), called or not:
    CenterNet binds ``print = logger.info``."""
    return _logger_method(func) and (dotted(func) or "").rsplit(".", 1)[-1] in SILENCEABLE_RECORDS


SILENCEABLE_RECORDS = LOGGER_RECORDS | {"log"}


def is_logger_call(call: ast.Call) -> bool:
    """``logger.info(...)``, ``logging.warning(...)``, ``_logger.log(...)``: records that go through
    the logging configuration (not ``print``)."""
    return _logger_method(call.func)


def _logger_method(func: ast.expr) -> bool:
    name = dotted(func) or ""
    receiver, _, last = name.rpartition(".")
    if not receiver:
        return False
    held = receiver.split(".")[-1]
    if LOGGER_NAME.match(held):
        return bool(LOG_CALL.match(last))
    # a receiver whose name has "log"/"logger" as one of its words (``Log_file``, ``train_logger``)
    # making a record of a level (``Log_file.info(...)``): a ``logging.Logger`` by its name and its
    # methods (not ``log_writer.add_scalar``: a writer's method)
    return _names_a_logger(held) and last in LOGGER_RECORDS


def rank_zero_decorated(fn: ast.AST) -> bool:
    """``@rank_zero_only def log_metrics(...)`` (Lightning, also ``@rank_zero_call``, ``@master_only``):
    the function runs on rank 0 only, so each call of it that hands it the loss is a rank-0 log."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return any(
        RANK0_DECORATOR.match((dotted(d.func if isinstance(d, ast.Call) else d) or "").rsplit(".", 1)[-1])
        for d in fn.decorator_list
    )
