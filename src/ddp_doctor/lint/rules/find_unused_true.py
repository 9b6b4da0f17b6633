"""find-unused-true: DDP built with ``find_unused_parameters=True``.

With it, DDP traverses the autograd graph after every forward to find parameters that will get
no gradient (torch docs, DistributedDataParallel: "this flag results in an extra traversal of the
autograd graph every iteration"). It costs time, not accuracy: severity info.
Autofix: ``True`` → ``False`` (DDP raises a clear error if a parameter really gets no gradient).
A value read from configuration with ``True`` as its fallback (KAIR's
``opt.get("find_unused_parameters", True)``, also through a variable assigned just before) is
reported config-gated, without an autofix.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddp_doctor.core.catalog import Text
from ddp_doctor.lint.context import FileContext, keyword
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.rules.base import Rule, Violation, replace_node

# Constructors whose keyword configures DDP's find_unused_parameters.
DDP_CONFIGS: dict[str, str] = {
    "torch.nn.parallel.DistributedDataParallel": "find_unused_parameters",
    "accelerate.utils.DistributedDataParallelKwargs": "find_unused_parameters",
    "accelerate.DistributedDataParallelKwargs": "find_unused_parameters",
    "transformers.TrainingArguments": "ddp_find_unused_parameters",
}


class FindUnusedTrue(Rule):
    id = "find-unused-true"
    flagged = (
        "`find_unused_parameters=True` on DDP, accelerate `DistributedDataParallelKwargs`, or "
        "`ddp_find_unused_parameters=True` on `TrainingArguments`"
    )
    not_flagged = "a value from config without a True fallback"
    autofix = "`True` → `False`"
    required = (tuple(DDP_CONFIGS.values()),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        for node in ctx.of_type(ast.Call):
            kw_name = DDP_CONFIGS.get(ctx.call_qualname(node) or "")
            value = keyword(node, kw_name) if kw_name else None
            source = _through_name(ctx, value, node)
            default = _config_default(source) if source is not None else None
            if value is not None and source is not None and default is not None:
                origin = ctx.segment(source)
                if source is not value:  # read into a variable first
                    origin = f"{origin}` (through `{ctx.segment(value)}`)"
                else:
                    origin = f"{origin}`"
                yield self.violation(
                    value,
                    Text(
                        f"`{kw_name}` comes from `{origin}, which is True unless the configuration "
                        "sets it: DDP re-traverses the autograd graph every step (speed, not accuracy).",
                        f"`{kw_name}` 取自 `{origin}，配置未设置时为 True：DDP 每步都要重新遍历 autograd 图"
                        "（影响速度，不影响精度）。",
                    ),
                    gated_by=f"{default} not set in the configuration (default True)",
                    setting=True,
                )
                continue
            if isinstance(value, ast.Constant) and value.value is True:
                yield self.violation(
                    value,
                    Text(
                        f"`{kw_name}=True`: DDP re-traverses the autograd graph every step (speed, not accuracy).",
                        f"`{kw_name}=True`：DDP 每步都要重新遍历 autograd 图（影响速度，不影响精度）。",
                    ),
                    edits=(replace_node(ctx, value, "False"),),
                    setting=True,
                )


def _through_name(ctx: FileContext, value: ast.expr | None, at: ast.AST) -> ast.expr | None:
    """The expression a plain name was last assigned before ``at`` in the same function
    (``flag = opt.get("find_unused_parameters", True)`` ... ``find_unused_parameters=flag``)."""
    if not isinstance(value, ast.Name):
        return value
    scope = ctx.enclosing_function(at)
    line = getattr(at, "lineno", 0)
    before = [b for b in ctx.bindings(scope).get(value.id, []) if b.lineno < line]
    last = before[-1] if before else None
    if isinstance(last, ast.Assign) and len(last.targets) == 1 and isinstance(last.targets[0], ast.Name):
        return last.value
    return value


def _config_default(value: ast.expr | None) -> str | None:
    """The key of ``cfg.get("key", True)`` / ``getattr(cfg, "key", True)``: True unless configured."""
    if not isinstance(value, ast.Call):
        return None
    if isinstance(value.func, ast.Attribute) and value.func.attr == "get" and len(value.args) == 2:
        key, fallback = value.args
    elif isinstance(value.func, ast.Name) and value.func.id == "getattr" and len(value.args) == 3:
        key, fallback = value.args[1], value.args[2]
    else:
        return None
    if isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(fallback, ast.Constant):
        return key.value if fallback.value is True else None
    return None
