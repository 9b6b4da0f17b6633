"""FileContext.calls_named: the per-file index of calls by callee name that rules use instead of
scanning every call once per function (the hostile matrix's 20,000-def file)."""

from __future__ import annotations

import ast

from ddp_doctor.lint.context import FileContext

SOURCE = """\
def step(model):
    model.backward()

class Trainer:
    def step(self):
        self.step()
        run(step(1))

step(2)
obj.other.step(3)
steps(4)
"""


def _ctx() -> FileContext:
    return FileContext.build("m.py", SOURCE, ast.parse(SOURCE))


def test_calls_named_finds_plain_and_attribute_callees_in_source_order() -> None:
    calls = _ctx().calls_named("step")
    assert [ast.unparse(c) for c in calls] == ["self.step()", "step(1)", "step(2)", "obj.other.step(3)"]


def test_calls_named_equals_a_full_scan_for_every_name() -> None:
    ctx = _ctx()
    for name in ("step", "backward", "run", "steps", "missing"):
        scan = [
            c
            for c in ctx.of_type(ast.Call)
            if (isinstance(c.func, ast.Name) and c.func.id == name)
            or (isinstance(c.func, ast.Attribute) and c.func.attr == name)
        ]
        assert ctx.calls_named(name) == scan
    assert ctx.calls_named("missing") == []
