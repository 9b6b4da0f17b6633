"""rank0-only-loss-log, what a log call logs: the values it is handed (also through a helper that
logs its arguments, or a Lightning ``'log'`` dict), less those its own text labels as validation
(``f"val loss {x}"``, a TensorBoard tag ``"val/loss"``).
"""

from __future__ import annotations

import ast
import re

from ddp_doctor.lint.context import FileContext, dotted
from ddp_doctor.lint.rank0 import TABLE_WRITERS, is_log_call
from ddp_doctor.lint.rules._rank0_regions import helper_logged_args, holds_rank0_object, log_entry
from ddp_doctor.lint.state_logs import state_log_call

# A log's own label that says the value is a validation one: ``'cv/{}'.format(name)`` as a
# TensorBoard tag, ``"val/loss"`` as a dict key, ``f"... cv_loss {x}"`` / ``"val loss %.3f"`` before
# the placeholder that receives it.
VALIDATION_LABEL = re.compile(
    r"(^|[^A-Za-z0-9])(val|valid|validation|cv|eval|evaluation|test)([^A-Za-z0-9]|$)", re.IGNORECASE
)


TAG_METHODS = frozenset({"add_scalar", "add_scalars", "add_histogram", "log_metric"})


_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%[-+ #0]*\d*(?:\.\d+)?[a-zA-Z]")

# Words of a log method's name that say it records pictures or media of the batch, not a scalar
# curve: ``log_images_to_wandb(x, y, y_hat, id_logs, ...)``, ``add_image``, ``add_figure``.
MEDIA_WORDS = frozenset(
    {"image", "images", "img", "imgs", "figure", "figures", "video", "videos", "audio", "audios", "picture"}
)
SCALAR_WORDS = frozenset({"loss", "losses", "scalar", "scalars", "metric", "metrics", "stats"})


def logged_values(
    ctx: FileContext, node: ast.AST, sinks: set[str] | frozenset[str] = frozenset()
) -> list[ast.AST]:
    if isinstance(node, ast.Call) and (_tag_says_validation(node) or _logs_media(node)):
        return []
    values = _raw_logged_values(ctx, node, sinks)
    return [part for v in values for part in _unlabelled(v)]


def _raw_logged_values(ctx: FileContext, node: ast.AST, sinks: set[str] | frozenset[str]) -> list[ast.AST]:
    if isinstance(node, ast.Call):
        if (state := state_log_call(ctx, node)) is not None:
            return list(state[1])  # ``progress.display(i)``: the meters ``progress`` was built from
        if not is_log_call(node) and (handed := helper_logged_args(ctx, node)):
            return list(handed)
        if isinstance(node.func, ast.Attribute) and node.func.attr in TABLE_WRITERS:
            return [node.func.value]  # ``log.to_csv(path)``: the table, not the path
        if ctx.project is not None and not is_log_call(node):
            found = ctx.project.call_logged_args(ctx, node)  # project logger: the arguments it writes
            if found is not None:
                return list(found)
        receiver = [node.func.value] if isinstance(node.func, ast.Attribute) and not is_log_call(node) else []
        if receiver and holds_rank0_object(ctx, node, dotted(receiver[0]) or "", sinks):
            # a writer that exists on rank 0 only is where values go, not a value: what
            # ``log_writer.update(lr=lr)`` logs is ``lr``, even after ``log_writer.update(loss=loss)``
            receiver = []
        return [*receiver, *node.args, *(k.value for k in node.keywords)]  # ``meter.write_summary(writer)``
    if isinstance(node, ast.Assign):
        return [node.value]
    if isinstance(node, ast.Dict) and (entry := log_entry(node)) is not None:
        return [entry]
    return []


def _logs_media(call: ast.Call) -> bool:
    """A call whose method name says it logs images or other media (pix2style2pixel's
    ``self.wb_logger.log_images_to_wandb(x, y, y_hat, id_logs, ...)``, TensorBoard ``add_image``):
    what it shows beside the pictures (the loss call's per-sample ``id_logs``) is a sample of this
    rank's batch, not a curve of the training loss. A name that also says scalars or losses
    (``log_losses_and_images``) is a loss log."""
    name = (dotted(call.func) or "").rsplit(".", 1)[-1]
    words = set(re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower().split("_"))
    return bool(words & MEDIA_WORDS) and not words & SCALAR_WORDS


def _unlabelled(value: ast.AST) -> list[ast.AST]:
    """The parts of a logged expression its own labels do not call validation values."""
    if isinstance(value, ast.JoinedStr):
        if _opens_with_validation(value.values[0] if value.values else None):
            return []  # ``f"valid -- epoch: {epoch}, loss: {v}"``: the whole message is a validation report
        out: list[ast.AST] = []
        label = ""
        for part in value.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                label = part.value
            elif not VALIDATION_LABEL.search(label):
                out.append(part)
        return out
    template, args = _template(value)
    if template is not None:
        if _opens_with_validation(ast.Constant(template)):
            return []
        labels, start = [], 0  # the text just before each placeholder
        for m in _PLACEHOLDER.finditer(template):
            labels.append(template[start : m.start()])
            start = m.end()
        return [a for i, a in enumerate(args) if not (i < len(labels) and VALIDATION_LABEL.search(labels[i]))]
    if isinstance(value, ast.Dict):
        return [
            v
            for k, v in zip(value.keys, value.values)
            if not (
                isinstance(k, ast.Constant) and isinstance(k.value, str) and VALIDATION_LABEL.match(k.value)
            )
        ]
    return [value]


def _opens_with_validation(part: ast.AST | None) -> bool:
    """A message whose opening words say it reports validation (``"valid -- epoch: ..."``, ``"Eval
    loss ..."``): every value it carries is a validation one, whatever label precedes each."""
    return (
        isinstance(part, ast.Constant)
        and isinstance(part.value, str)
        and bool(VALIDATION_LABEL.match(part.value.lstrip(" [(|-=*#>:\n\t")))
    )


def _template(value: ast.AST) -> tuple[str | None, list[ast.expr]]:
    """``"..." % (a, b)`` / ``"...".format(a, b)``: the template and its positional values."""
    if (
        isinstance(value, ast.BinOp)
        and isinstance(value.op, ast.Mod)
        and isinstance(value.left, ast.Constant)
        and isinstance(value.left.value, str)
    ):
        right = value.right
        return value.left.value, list(right.elts) if isinstance(right, ast.Tuple) else [right]
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "format"
        and isinstance(value.func.value, ast.Constant)
        and isinstance(value.func.value.value, str)
        and not value.keywords
        and not any(isinstance(a, ast.Starred) for a in value.args)
    ):
        return value.func.value.value, list(value.args)
    return None, []


def _tag_says_validation(call: ast.Call) -> bool:
    """``writer.add_scalar('cv/{}'.format(name), v, step)``: the tag names a validation value."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in TAG_METHODS and call.args):
        return False
    tag = call.args[0]
    text = (
        tag.value
        if isinstance(tag, ast.Constant) and isinstance(tag.value, str)
        else _template(tag)[0]
        or (
            tag.values[0].value
            if isinstance(tag, ast.JoinedStr) and tag.values and isinstance(tag.values[0], ast.Constant)
            else None
        )
    )
    return isinstance(text, str) and bool(VALIDATION_LABEL.match(text))
