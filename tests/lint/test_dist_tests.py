"""lint/dist_tests.py: which helpers answer "is this run distributed?" (used by the loss provenance)."""

from __future__ import annotations

import ast

from ddp_doctor.lint.dist_tests import asks_if_distributed, distributed_predicates

SOURCE = """
import os
import torch.distributed as dist

def is_dist():
    return dist.is_available() and dist.is_initialized()

def multi_process():
    return int(os.environ.get("WORLD_SIZE", 1)) > 1

def initialized():
    return dist.is_initialized()

def get_world_size():
    return dist.get_world_size() if is_dist() else 1

def is_main():
    return not dist.is_initialized() or dist.get_rank() == 0

def has_cuda():
    return torch.cuda.is_available()
"""


def _functions() -> list[ast.AST]:
    return [n for n in ast.walk(ast.parse(SOURCE)) if isinstance(n, ast.FunctionDef)]


def test_predicates_are_boolean_tests_of_the_process_group() -> None:
    # a number (the world size), a rank-0 test and an unrelated test are not predicates
    assert distributed_predicates(_functions()) == {"is_dist", "multi_process", "initialized"}


def test_a_test_names_the_flag_or_calls_a_predicate() -> None:
    def check(text: str) -> bool:
        test = ast.parse(text, mode="eval").body
        return asks_if_distributed(test, text, {"is_dist"})

    assert check("args.distributed")
    assert check("is_dist()")
    assert check("utils.is_dist()")
    assert not check("is_main()")
    assert not check("step % 10 == 0")
