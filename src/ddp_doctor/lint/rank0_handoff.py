"""Rank-0 tests handed from one function or file to another (shared by project mode and
rank0-only-loss-log).

A rank-0 test often leaves the place it is computed before it guards a log:

- returned in a tuple (neuraloperator ``device, is_logger = setup(config)``, where ``setup`` binds
  ``is_logger = comm.get_local_rank() == 0`` when distributed and ``True`` otherwise);
- passed to a constructor and kept on the instance (``Trainer(..., verbose=config.verbose and
  is_logger)`` → ``self.verbose = verbose`` → ``if self.verbose: print(avg_loss)`` in another file).

What is compared decides, as in ``lint/rank0.py``: a value counts when it is a rank-0 test there.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection, Iterable

from ddp_doctor.lint.context import init_of, parameter_names, positional_params, walk_local
from ddp_doctor.lint.rank0 import is_rank0_test, is_rank_number, rank0_locals

# ``(call, position)`` → the positions of the called function's returned tuple that are rank-0 tests
ReturnsRank0 = Callable[[ast.Call], Collection[int]]


def returned_rank0_positions(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    predicates: Collection[str],
    parents: dict[ast.AST, ast.AST],
) -> set[int]:
    """Positions of ``fn``'s returned tuple that hold a rank-0 test on every ``return``
    (``return device, is_logger``): a test itself, or a local bound only to rank-0 tests."""
    returns = [n for n in walk_local(fn.body) if isinstance(n, ast.Return)]
    if not returns or not all(isinstance(r.value, ast.Tuple) for r in returns):
        return set()
    sizes = {len(r.value.elts) for r in returns if isinstance(r.value, ast.Tuple)}
    if len(sizes) != 1:
        return set()
    flags = set(predicates) | rank0_locals(fn, walk_local(fn.body), predicates, parents)
    return {
        k
        for k in range(sizes.pop())
        if all(isinstance(r.value, ast.Tuple) and is_rank0_test(r.value.elts[k], flags) for r in returns)
    }


def unpacked_rank0(nodes: Iterable[ast.AST], returns_rank0: ReturnsRank0) -> set[str]:
    """Names a function binds, by unpacking a call, to a position the callee returns a rank-0 test in
    (``device, is_logger = setup(config)``). ``nodes``: the function's own nodes."""
    bound: dict[str, bool] = {}
    for n in nodes:
        if not isinstance(n, ast.Assign):
            continue
        for t in n.targets:
            if isinstance(t, ast.Name):
                bound[t.id] = False  # rebound to something else: not only a rank-0 test
            elif isinstance(t, ast.Tuple) and isinstance(n.value, ast.Call):
                positions = returns_rank0(n.value)
                for k, e in enumerate(t.elts):
                    if isinstance(e, ast.Name):
                        bound[e.id] = bound.get(e.id, True) and k in positions
    return {k for k, v in bound.items() if v}


def rank0_arguments(call: ast.Call, flags: Collection[str]) -> set[str | int]:
    """The arguments of ``call`` that are rank-0 tests where it is made: keywords by name, positional
    arguments by position (``Trainer(model, verbose=config.verbose and is_logger)`` → ``{"verbose"}``)."""
    return _arguments_where(call, lambda a: is_rank0_test(a, flags))


def rank_arguments(call: ast.Call, predicates: Collection[str]) -> set[str | int]:
    """The arguments of ``call`` that are the rank itself where it is made, by keyword name or
    position (``Runner(cfg, model, main_pod=args.rank)`` → ``{"main_pod"}``): the callee keeps
    the rank under a name of its own, and ``== 0`` on that name is a rank-0 test."""
    return _arguments_where(call, lambda a: is_rank_number(a, predicates))


def _arguments_where(call: ast.Call, test: Callable[[ast.expr], bool]) -> set[str | int]:
    """The keywords (by name) and positional arguments (by position) of ``call`` that pass ``test``."""
    out: set[str | int] = {k.arg for k in call.keywords if k.arg and test(k.value)}
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            break  # later positions are unknown
        if test(a):
            out.add(i)
    return out


def kept_parameters(cls: ast.ClassDef) -> dict[str, str]:
    """``{parameter: attribute}`` for each ``self.attribute = parameter`` at the top level of the
    class's ``__init__`` (the instance keeps what its constructor was handed)."""
    init = init_of(cls)
    if init is None:
        return {}
    params = set(parameter_names(init))
    out: dict[str, str] = {}
    for stmt in init.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(t := stmt.targets[0], ast.Attribute)
            and isinstance(t.value, ast.Name)
            and t.value.id == "self"
            and isinstance(stmt.value, ast.Name)
            and stmt.value.id in params
        ):
            out[stmt.value.id] = t.attr
    return out


def constructor_positions(cls: ast.ClassDef) -> list[str]:
    """The names of ``cls.__init__``'s positional parameters after ``self`` (position → name)."""
    init = init_of(cls)
    if init is None:
        return []
    return positional_params(init)


def rank0_attributes(cls: ast.ClassDef, handed: Collection[str | int]) -> set[str]:
    """``self.<attr>`` spellings that hold a rank-0 test in every instance of ``cls``: the attributes
    its ``__init__`` keeps from the parameters ``handed`` (names or positions) that every
    construction of the class binds to a rank-0 test."""
    positions = constructor_positions(cls)
    names = {h for h in handed if isinstance(h, str)}
    names |= {positions[h] for h in handed if isinstance(h, int) and h < len(positions)}
    return {f"self.{attr}" for param, attr in kept_parameters(cls).items() if param in names}
