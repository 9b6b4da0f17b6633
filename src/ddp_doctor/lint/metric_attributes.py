"""Metric objects a class builds in one method and feeds the loss in another.

A Lightning module builds ``self.train_loss = MeanMetric()`` (or a ``ModuleDict`` of them) in
``__init__``, feeds it in ``training_step`` (``self.train_loss.update(loss)``) and logs it at the
epoch's end. torchmetrics all-reduces such a metric when it computes (``sync_on_compute`` defaults
to True; ``self.log(name, metric)`` computes it), so what is logged is the global value, not rank
0's. lint/provenance.py knows a synchronised metric built in the scope that updates it; this
module finds the one built on ``self`` elsewhere in the class (Boltz's confidence-loss loggers).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ddp_doctor.lint.context import FileContext

# Empty containers a class fills with metrics item by item (``self.m = nn.ModuleDict()`` then
# ``self.m[k] = MeanMetric()``): they hold what their items hold.
CONTAINERS = frozenset({"ModuleDict", "dict", "ModuleList", "list", "MetricCollection"})


def built_synced_on_self(
    ctx: FileContext, scope: ast.AST, receiver: str, synced: Callable[[ast.Call], bool]
) -> bool:
    """``receiver`` (``self.attr``) is, everywhere its class binds it or an item of it, a metric
    ``synced`` accepts (an empty container filled only with such metrics counts as one)."""
    parts = receiver.split(".")
    if len(parts) != 2 or parts[0] != "self":
        return False
    cls = ctx.parents.get(scope)
    if not isinstance(cls, ast.ClassDef):
        return False
    attr = parts[1]
    metrics = 0
    for node in ast.walk(cls):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            item = isinstance(target, ast.Subscript)
            base = target.value if isinstance(target, ast.Subscript) else target
            if not (
                isinstance(base, ast.Attribute)
                and base.attr == attr
                and isinstance(base.value, ast.Name)
                and base.value.id == "self"
            ):
                continue
            value = node.value
            if not isinstance(value, (ast.Call, ast.Dict, ast.List)):
                return False
            if isinstance(value, ast.Call) and synced(value):
                metrics += 1
            elif item or not _empty_container(value):
                return False  # bound to something else somewhere: not known to sync
    return metrics > 0


def _empty_container(value: ast.expr) -> bool:
    if isinstance(value, (ast.Dict, ast.List)):
        return not (value.keys if isinstance(value, ast.Dict) else value.elts)
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name in CONTAINERS and not value.args and not value.keywords
    return False
