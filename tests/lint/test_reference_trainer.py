"""The reference trainer (ddp_doctor.trainer) through the linter.

The trainer is correct by default, and every fault is an ``if cfg.has("fault"):`` branch. A
precise linter must not flag code that only runs under a runtime flag, so:

1. the trainer as written gives 0 findings;
2. each fault's *code path* is checked by specialising the trainer's source for that fault — every
   ``cfg.has(name)`` becomes a constant, constant ``if``s keep only the branch taken, dead code
   after ``return`` is dropped — which yields the straight-line script a user with that bug
   would have written. The table below says which faults lint then flags, and for the others
   why the mistake is invisible statically in this trainer's shape (runtime checks cover them).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ddp_doctor.lint.engine import lint_source

faults_module = pytest.importorskip("ddp_doctor.trainer.faults")
TRAINER = Path(faults_module.__file__).parent
FAULTS: dict[str, str] = faults_module.FAULT_FINDINGS

# Fault -> lint findings on its specialised code path (exact).
STATIC: dict[str, set[str]] = {
    "zero-grad-per-micro": {"zero-grad-inside-accum"},
    "sched-per-micro": {"scheduler-per-microstep"},
    "clip-before-unscale": {"clip-before-unscale"},
    "sync-every-micro": {"accum-no-sync-missing"},
}
# Fault -> why lint (correctly) stays silent on this trainer's code path.
NOT_STATIC: dict[str, str] = {
    "no-sampler": "the loader is returned in a tuple and iterated through a dataclass field: not traceable",
    "no-set-epoch": "same: the sampler reaches the epoch loop through TrainState, and set_epoch is elsewhere",
    "loss-unscaled": "the fault multiplies the token-normalised loss back (`loss * accum`): a product is not provably raw",
    "sync-toggle-after-forward": "the forward runs through an alias (`forward = model`) of a different object than "
    "the toggled `state.ddp`: not provably the same module",
    "fp16-no-scaler": "the autocast dtype is a runtime value (cfg.precision), never a literal float16",
    "rank0-loss-log": "the logged value is a local CE sum returned in a dataclass, not logged under a rank-0 guard",
    "replica-desync": "runtime-only finding (no lint ID)",
    "bypass-ddp": "runtime-only finding (no lint ID)",
    "fp16-overflow": "runtime-only finding (no lint ID)",
    "nan-at-step": "runtime-only finding (no lint ID)",
    "per-microbatch-mean-loss": "runtime-only finding (no lint ID)",
    "lr-too-high": "runtime-only finding (no lint ID)",
}


class _Specialise(ast.NodeTransformer):
    """Partially evaluate ``<anything>.has("fault")`` for one set of faults."""

    def __init__(self, faults: set[str]) -> None:
        self.faults = faults

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if (
            isinstance(node.func, ast.Attribute)
            and node.func.attr == "has"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in FAULTS
        ):
            return ast.copy_location(ast.Constant(node.args[0].value in self.faults), node)
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not) and isinstance(node.operand, ast.Constant):
            return ast.copy_location(ast.Constant(not node.operand.value), node)
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        absorbing = not isinstance(node.op, ast.And)  # False absorbs `and`, True absorbs `or`
        if any(isinstance(v, ast.Constant) and bool(v.value) == absorbing for v in node.values):
            return ast.copy_location(ast.Constant(absorbing), node)
        rest = [v for v in node.values if not isinstance(v, ast.Constant)]
        if not rest:
            return ast.copy_location(ast.Constant(not absorbing), node)
        return rest[0] if len(rest) == 1 else ast.copy_location(ast.BoolOp(op=node.op, values=rest), node)

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.test, ast.Constant):
            return node.body if node.test.value else node.orelse
        return node

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
        self.generic_visit(node)
        if isinstance(node.test, ast.Constant):
            return node.body if node.test.value else node.orelse
        return node


def _tidy(tree: ast.AST) -> None:
    """Drop statements after an unconditional return/raise; give emptied bodies a ``pass``."""
    for node in ast.walk(tree):
        for field_name in ("body", "orelse", "finalbody"):
            block = getattr(node, field_name, None)
            if not isinstance(block, list) or (block and not isinstance(block[0], ast.stmt)):
                continue
            for i, stmt in enumerate(block):
                if isinstance(stmt, (ast.Return, ast.Raise)):
                    del block[i + 1 :]
                    break
            if not block and field_name == "body":
                block.append(ast.Pass())


def specialised(source: str, faults: set[str]) -> str:
    tree = _Specialise(faults).visit(ast.parse(source))
    _tidy(tree)
    return ast.unparse(ast.fix_missing_locations(tree))


def _trainer_sources() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(TRAINER.glob("*.py"))}


def _lint_ids(sources: dict[str, str]) -> set[str]:
    ids = set()
    for name, text in sources.items():
        result = lint_source(text, name)
        assert result.diagnostics == [], name
        ids |= {f.id for f in result.findings}
    return ids


def test_clean_reference_trainer_has_no_findings() -> None:
    assert _lint_ids(_trainer_sources()) == set()


def test_clean_specialised_trainer_has_no_findings() -> None:
    assert _lint_ids({n: specialised(s, set()) for n, s in _trainer_sources().items()}) == set()


def test_fault_tables_name_only_real_faults() -> None:
    assert (set(STATIC) | set(NOT_STATIC)) <= set(FAULTS)
    assert not set(STATIC) & set(NOT_STATIC)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_code_path_is_flagged_exactly_where_static(fault: str) -> None:
    ids = _lint_ids({n: specialised(s, {fault}) for n, s in _trainer_sources().items()})
    assert ids <= {FAULTS[fault]}  # never a finding the fault does not cause
    if fault in STATIC:
        assert ids == STATIC[fault]
    elif fault in NOT_STATIC:
        assert ids == set()
