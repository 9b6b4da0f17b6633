"""Is the tensor passed to backward divided (by the accumulation count or a token count)?

Answers ``"scaled"``, ``"raw"`` or ``"unknown"`` by following the expression back through its
assignments in the same function and through same-file helpers' ``return`` statements. Only a
value that provably comes straight from a loss function or a model forward, with no division
on the way, is ``"raw"``; a multiplication, an unknown call or a parameter is ``"unknown"``,
and unknown is never flagged. A tuple unpacked from a same-file helper whose returns all have
its length is followed by position; a constant term of a sum (``torch.tensor(0)``) is no loss
term; ``model(..., labels=y)[0]`` is the loss (Hugging Face tuples put it first).

A loss whose reduction configuration picks (SheepRL's ``policy_loss(..., cfg.algo.loss_reduction)``,
``nn.CrossEntropyLoss(reduction=args.reduction)``) is ``"unknown"``: a sum over the micro-steps may be
the design there. A loss divided only by its own micro-batch's size is that micro-batch's mean: as
``"raw"`` as a mean-reduced loss.
"""

from __future__ import annotations

import ast
import re

from ddp_doctor.lint.context import FileContext, dotted, keyword, method
from ddp_doctor.lint.loops import scaled_alias_of

LOSS_FUNCTIONS = re.compile(
    r"^torch\.nn\.functional\.(\w*loss\w*|cross_entropy|nll_loss|kl_div|binary_cross_entropy\w*)$"
)
LOSS_MODULES = re.compile(r"^torch\.nn\.\w*Loss$")
# The last name of a callee that runs a model forward (`model(x)`, `self.net(x)`, `ddp_model(x)`).
FORWARD_CALLEE = re.compile(r"(model|net|engine|ddp|fsdp)$", re.IGNORECASE)
# The logistic GAN losses spelled out over the discriminator's logits (non-saturating ``softplus(-x)``,
# ``-logsigmoid(x)``): a loss only when that argument is a forward's output
GAN_LOSSES = frozenset({"torch.nn.functional.softplus", "torch.nn.functional.logsigmoid"})
# A model's methods that run its forward and return the loss of a batch
MODEL_STEPS = frozenset({"forward", "train_step", "training_step", "train_one_step"})
PASS_THROUGH = {"mean", "sum", "float", "double", "squeeze", "clone", "contiguous", "to", "view", "reshape"}
MAX_DEPTH = 6

State = str  # "scaled" | "raw" | "unknown"


class LossTracer:
    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.criteria = {
            d
            for n in ctx.of_type(ast.Assign)
            if isinstance(n.value, ast.Call) and LOSS_MODULES.match(ctx.call_qualname(n.value) or "")
            for t in n.targets
            if (d := dotted(t))
        }
        # each criterion's reduction as its constructors give it (``nn.CrossEntropyLoss(reduction=args.r)``)
        self.criterion_reductions: dict[str, set[State]] = {}
        for n in ctx.of_type(ast.Assign):
            if isinstance(n.value, ast.Call) and LOSS_MODULES.match(ctx.call_qualname(n.value) or ""):
                for t in n.targets:
                    if d := dotted(t):
                        self.criterion_reductions.setdefault(d, set()).add(_reduction(n.value))

    def state(self, expr: ast.AST | None, at: ast.AST, depth: int = MAX_DEPTH) -> State:
        if expr is None or depth <= 0:
            return "unknown"
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, (ast.Div, ast.FloorDiv)):
                if self._micro_batch_size(expr.right, at):
                    # a mean over this micro-batch's own tokens or samples (fairseq-style ``loss /
                    # sample["sample_size"]``): as undivided by the count as a mean-reduced loss
                    return self.state(expr.left, at, depth - 1)
                return "scaled"
            if isinstance(expr.op, (ast.Add, ast.Sub)):
                left, right = self._term_state(expr.left, at, depth), self._term_state(expr.right, at, depth)
                # a constant term (``lm_loss = torch.tensor(0)`` on the path without that loss) adds
                # nothing to the gradient: the sum is as raw as its loss terms
                terms = {left, right} - {"constant"}
                if "raw" in terms and "scaled" not in terms and isinstance(expr.op, ast.Add):
                    # an undivided loss plus any other term (``loss + loss_sparsity * w``, a
                    # regulariser): the sum's gradient holds the loss's gradient undivided, whatever
                    # the other term is; a divided term beside it leaves the intent unclear
                    return "raw"
                return "raw" if terms == {"raw"} else "unknown"
            if isinstance(expr.op, ast.Mult):
                return self._product_state(expr.left, expr.right, at, depth)
            return "unknown"
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
            # ``-F.logsigmoid(d_fake).mean()``: the sign changes nothing about a division
            return self.state(expr.operand, at, depth - 1)
        if isinstance(expr, ast.IfExp):
            # ``criterion(logits, y) if plain else criterion(logits, y, mask)`` (PointNeXt): a loss
            # either way, raw only when both branches are
            body, orelse = self.state(expr.body, at, depth - 1), self.state(expr.orelse, at, depth - 1)
            return "raw" if body == orelse == "raw" else "scaled" if "scaled" in (body, orelse) else "unknown"
        if isinstance(expr, ast.Call):
            return self._call_state(expr, at, depth)
        if isinstance(expr, (ast.Attribute, ast.Subscript)):
            return self._output_state(expr, at, depth)
        if isinstance(expr, ast.Name):
            return self._name_state(expr.id, at, depth)
        return "unknown"

    def _product_state(self, left: ast.AST, right: ast.AST, at: ast.AST, depth: int) -> State:
        """A raw loss weighted per sample or per term (``(losses["loss"] * weights).mean()``,
        ``torch.mul(loss, w)``) stays raw; any other factor (``loss * accum`` multiplies a division
        back) is unknown."""
        for loss_side, factor in ((left, right), (right, left)):
            if (_weight(factor) or _world_size(self.ctx, factor)) and self.state(
                loss_side, at, depth - 1
            ) == "raw":
                return "raw"
        return "unknown"

    def _call_state(self, call: ast.Call, at: ast.AST, depth: int) -> State:
        if keyword(call, "num_items_in_batch") is not None:
            return "scaled"  # HF models divide by the given global token count
        qual = self.ctx.call_qualname(call) or ""
        if qual in ("torch.mean", "torch.sum") and call.args:
            # ``total_loss = torch.mean(total_loss)`` (the DataParallel branch): the same loss
            return self.state(call.args[0], at, depth - 1)
        if qual == "torch.mul" and len(call.args) == 2:
            # ``loss = torch.mul(loss, w)`` (HPA's class weights): the operator spelled as a function
            return self._product_state(call.args[0], call.args[1], at, depth)
        if qual in GAN_LOSSES and call.args:
            # the logistic GAN losses written out (StyleGAN2/pi-GAN ``F.softplus(-d_fake).mean()``,
            # ``-F.logsigmoid(d_real)``): a loss of the discriminator's forward, raw when that is
            # (a walk of its own, bounded by its own depth: the loss's path there is spent already)
            return "raw" if self._forward_output(call.args[0], at, MAX_DEPTH) else "unknown"
        m = method(call)
        if m and isinstance(call.func, ast.Attribute):
            if m[1] in ("div", "div_", "true_divide"):
                return "scaled"
            if m[1] in PASS_THROUGH or m[1] == "scale":
                inner = call.args[0] if m[1] == "scale" and call.args else call.func.value
                return self.state(inner, at, depth - 1)
        if LOSS_FUNCTIONS.match(qual):
            return _reduction(call)
        if dotted(call.func) in self.criteria:
            built = self.criterion_reductions.get(dotted(call.func) or "", {"raw"})
            return built.pop() if len(built) == 1 else "unknown"
        fn = self.ctx.helper(call)
        if fn is not None:
            states = {
                self.state(r.value, r, depth - 1) for r in self.ctx.local(fn) if isinstance(r, ast.Return)
            }
            return states.pop() if len(states) == 1 else "scaled" if "scaled" in states else "unknown"
        if _forward_call(call):
            return "raw"
        if _loss_callee(call):
            return _reduction(call)
        return "unknown"

    def _forward_output(self, expr: ast.AST, at: ast.AST, depth: int) -> bool:
        """``expr`` is a model forward's output, negated, reshaped, indexed or cut to its top-k
        (pi-GAN ``g_preds = torch.topk(g_preds, k, dim=0).values`` of ``g_preds, ... =
        discriminator_ddp(gen_imgs)``), read through the names that hold it."""
        if depth <= 0:
            return False
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
            return self._forward_output(expr.operand, at, depth - 1)
        if isinstance(expr, ast.Subscript):
            return self._forward_output(expr.value, at, depth - 1)
        if isinstance(expr, ast.Attribute) and expr.attr in ("values", "logits"):
            inner = expr.value
            if (
                isinstance(inner, ast.Call)
                and (self.ctx.call_qualname(inner) or "") == "torch.topk"
                and inner.args
            ):
                return self._forward_output(inner.args[0], at, depth - 1)
            return self._forward_output(inner, at, depth - 1)
        if isinstance(expr, ast.Call):
            m = method(expr)
            if m and isinstance(expr.func, ast.Attribute) and m[1] in PASS_THROUGH:
                return self._forward_output(expr.func.value, at, depth - 1)
            return _forward_call(expr)
        if isinstance(expr, ast.Name):
            d = self._reaching_def(expr.id, at)
            if isinstance(d, ast.Assign) and isinstance(d.targets[0], ast.Name):
                return self._forward_output(d.value, d, depth - 1)
            if isinstance(d, ast.Assign) and isinstance(d.targets[0], ast.Tuple):
                return isinstance(d.value, ast.Call) and _forward_call(d.value)
        return False

    def _output_state(self, expr: ast.Attribute | ast.Subscript, at: ast.AST, depth: int) -> State:
        """``outputs.loss`` / ``outputs["loss"]`` of a model forward (also a total's key:
        ``out["total_loss"]`` of a criterion returning its terms, ml-cvnets)."""
        is_loss = (isinstance(expr, ast.Attribute) and expr.attr == "loss") or (
            isinstance(expr, ast.Subscript)
            and isinstance(expr.slice, ast.Constant)
            and isinstance(expr.slice.value, str)
            and expr.slice.value in ("loss", "total_loss", "loss_total")
        )
        base: ast.AST | None = expr.value
        if not is_loss:
            # ``model(input_ids=..., labels=y)[0]``: a forward given its labels returns the loss
            # first (Hugging Face ``return_dict=False`` tuples, FiD's T5 reader)
            if (
                isinstance(expr, ast.Subscript)
                and isinstance(expr.slice, ast.Constant)
                and expr.slice.value == 0
                and isinstance(base, ast.Call)
                and keyword(base, "labels") is not None
                and _forward_call(base)
            ):
                return "raw"
            return "unknown"
        if isinstance(base, ast.Name):
            base = self._reaching_value(base.id, at)
        if isinstance(base, ast.Call):
            if keyword(base, "num_items_in_batch") is not None:
                return "scaled"
            return "raw" if _forward_call(base) or _loss_callee(base) else "unknown"
        return "unknown"

    def _name_state(self, name: str, at: ast.AST, depth: int) -> State:
        definition = self._reaching_def(name, at)
        if definition is None:
            return "unknown"
        if isinstance(definition, ast.AugAssign):
            return "scaled" if isinstance(definition.op, (ast.Div, ast.FloorDiv)) else "unknown"
        if isinstance(definition, (ast.With, ast.AsyncWith)):
            # ``with amp.scale_loss(loss, optimizer) as scaled_loss:``: the loss times a loss scale
            # apex takes out again, so as divided (or not) as ``loss`` itself
            for item in definition.items:
                var = item.optional_vars
                if isinstance(var, ast.Name) and var.id == name:
                    source = scaled_alias_of(item)
                    return "unknown" if source is None else self.state(source, definition, depth - 1)
            return "unknown"
        if isinstance(definition, ast.AnnAssign) and definition.value is not None:
            # ``out: Union[Dict, Tensor] = self.criteria(...)`` (ml-cvnets): the annotation changes nothing
            return self.state(definition.value, definition, depth - 1)
        if isinstance(definition, ast.Assign):
            target = definition.targets[0]
            if isinstance(target, ast.Name):
                return self.state(definition.value, definition, depth - 1)
            picked = _picked_calls(definition.value)
            if (
                isinstance(target, ast.Tuple)
                and picked
                and all(_forward_call(c) and keyword(c, "num_items_in_batch") is None for c in picked)
            ):
                # `logits, loss = model(x, y)`; also picked by a condition, each branch a forward
                # (DIAMOND ``loss, metrics = model(batch) if batch is not None else model()``)
                return "raw"
            if isinstance(target, ast.Tuple) and isinstance(definition.value, ast.Subscript):
                # ``outputs = model(**inputs)`` ... ``loss, logits = outputs[:2]``: the same unpacking
                # of a forward's outputs, through the name that holds them
                held = definition.value.value
                outputs = self._reaching_value(held.id, definition) if isinstance(held, ast.Name) else held
                if (
                    isinstance(outputs, ast.Call)
                    and _forward_call(outputs)
                    and keyword(outputs, "num_items_in_batch") is None
                ):
                    return "raw"
            if isinstance(target, ast.Tuple) and isinstance(definition.value, ast.Call):
                return self._unpacked_state(target, name, definition.value, depth)
        return "unknown"

    def _unpacked_state(self, target: ast.Tuple, name: str, call: ast.Call, depth: int) -> State:
        """``loss, aux = compute(...)`` with ``compute`` a same-file helper whose every ``return``
        is a tuple of the same length: the state of what each return puts at ``name``'s position
        (ai4code's ``loss, split_loss, rank_loss, lm_loss = forward_train_loss(...)``)."""
        fn = self.ctx.helper(call)
        names = [e.id if isinstance(e, ast.Name) else None for e in target.elts]
        if names.count(name) != 1 or any(isinstance(e, ast.Starred) for e in target.elts):
            return "unknown"
        if fn is None:
            # ``total_loss, loss_stats = criterion(outputs, targets)`` (SFA3D's ``Compute_Loss``): a loss
            # object of another file returning the loss first, its terms after
            # a method of a loss object too (SimXNS ``loss, is_correct = loss_function.calc(q, ctx, pos)``)
            first = names.index(name) == 0 and "loss" in name.lower()
            by_loss = _loss_callee(call) or _loss_object_method(call)
            return "raw" if first and by_loss and self.ctx.helper(call) is None else "unknown"
        position = names.index(name)
        states = set()
        for ret in self.ctx.local(fn):
            if not isinstance(ret, ast.Return):
                continue
            if not isinstance(ret.value, ast.Tuple) or len(ret.value.elts) != len(names):
                return "unknown"
            states.add(self.state(ret.value.elts[position], ret, depth - 1))
        return states.pop() if len(states) == 1 else "scaled" if "scaled" in states else "unknown"

    def _micro_batch_size(self, divisor: ast.AST, at: ast.AST, depth: int = 3) -> bool:
        """``divisor`` reads only the micro-batch the enclosing data loop is on: the loop's item
        (``for sample in samples``, not a ``range`` counter nor ``enumerate``'s index) or locals that
        loop assigned from it (``sample_size = int(sample["sample_size"])``, ``n = batch.ntokens``),
        callees aside. Dividing by that normalises one micro-batch (TaBERT's fairseq-style trainer);
        a count from before the loop (torchtitan's global token count, all-reduced), configuration
        (``args.accum_steps``) or the list of micro-batches (``len(micro_batches)``) is the step's."""
        names = _read_names(self.ctx, divisor)
        loop = _enclosing_loop(self.ctx, at)
        if not names or loop is None or depth <= 0:
            return False
        for name in names:
            # the innermost loop's own item: an outer loop's item is the whole group of micro-batches
            d = self._reaching_def(name, at)
            if isinstance(d, (ast.For, ast.AsyncFor)):
                if d is not loop or not _data_item(d, name):
                    return False
            elif isinstance(d, ast.Assign) and len(d.targets) == 1 and isinstance(d.targets[0], ast.Name):
                if _enclosing_loop(self.ctx, d) is not loop or not self._micro_batch_size(
                    d.value, d, depth - 1
                ):
                    return False
            else:
                return False
        return True

    def _term_state(self, expr: ast.AST, at: ast.AST, depth: int) -> State:
        """A term of a sum: ``"constant"`` for a number or ``torch.tensor(<number>)`` (also through
        the name it was last bound to), else its state."""
        if isinstance(expr, ast.Name):
            value = self._reaching_value(expr.id, at)
            if value is not None and _constant(self.ctx, value):
                return "constant"
        if _constant(self.ctx, expr):
            return "constant"
        return self.state(expr, at, depth - 1)

    def _reaching_value(self, name: str, at: ast.AST) -> ast.AST | None:
        d = self._reaching_def(name, at)
        if isinstance(d, ast.AnnAssign):
            return d.value
        return d.value if isinstance(d, ast.Assign) and isinstance(d.targets[0], ast.Name) else None

    def _reaching_def(self, name: str, at: ast.AST) -> ast.AST | None:
        """The last statement before ``at`` (source order, same function) that binds ``name``."""
        scope = self.ctx.enclosing_function(at)
        line = getattr(at, "lineno", 0)
        before = [n for n in self.ctx.bindings(scope).get(name, []) if n.lineno < line and n is not at]
        # a binding in the other branch of an ``if`` that holds ``at`` never reaches it (UNITER:
        # ``if task.startswith('itm'): loss = itm_loss ... else: loss = loss.mean()``)
        branches = _branches(self.ctx, at)
        reaching = [n for n in before if not _exclusive(branches, _branches(self.ctx, n))]
        return reaching[-1] if reaching else None


# A callee named as a loss computes one (``criterion(...)``, ``self.diffusion.training_losses``, a
# ``functools.partial`` of it held in ``compute_losses``, ml-cvnets' ``self.criteria(...)``): a per-batch
# loss nobody divided yet. Not a helper that says it scales or normalises (``scaled_loss(...)``,
# ``loss_scaler(...)``).
LOSS_CALLEE = re.compile(r"(^|_)(loss|losses|criterion|criteria)($|_)", re.IGNORECASE)
NOT_RAW_CALLEE = re.compile(r"scal|norm|avg|average|reduce|gather|sync|accum", re.IGNORECASE)
WEIGHT_FACTOR = re.compile(r"weight|^w$|^w_|_w$|coef|lambda|^lam$", re.IGNORECASE)


def _constant(ctx: FileContext, expr: ast.AST) -> bool:
    """A number, or ``torch.tensor(<number>)``: no loss term."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)
    return (
        isinstance(expr, ast.Call)
        and ctx.call_qualname(expr) == "torch.tensor"
        and len(expr.args) == 1
        and isinstance(expr.args[0], ast.Constant)
        and isinstance(expr.args[0].value, (int, float))
    )


REDUCTION_WORD = re.compile(r"reduction", re.IGNORECASE)


def _reduction(call: ast.Call) -> State:
    """A loss call's (or a criterion constructor's) state by its reduction: ``"unknown"`` for a
    reduction handed from elsewhere (``reduction=args.red``, ``policy_loss(logp, adv,
    cfg.algo.loss_reduction)``: configuration picks it, and SheepRL documents the sum over its
    mini-batches as the design), else ``"raw"``. A literal ``reduction="sum"`` stays raw: the corpus
    labels an undivided sum over micro-steps as the bug (retrosynthesis trainers' token sums)."""
    handed = [k.value for k in call.keywords if k.arg and REDUCTION_WORD.search(k.arg)]
    handed += [a for a in call.args if REDUCTION_WORD.search((dotted(a) or "").split(".")[-1])]
    if any(not (isinstance(v, ast.Constant) and isinstance(v.value, str)) for v in handed):
        return "unknown"
    return "raw"


def _read_names(ctx: FileContext, expr: ast.AST) -> set[str]:
    """The names ``expr`` reads as data: not a function called (``int``, ``len``), not the object or
    module whose function is called (``self.prepare(sample)``, ``torch.sum(mask)``) — a method of the
    data itself reads it (``sample.items()``, ``mask.sum()``) — and not a comprehension's own variables
    (``{k: v.cuda() for k, v in sample.items()}``)."""
    skipped: set[int] = set()
    bound: set[str] = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Call):
            root = node.func
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and (
                root is node.func or root.id in ("self", "cls") or root.id in ctx.imports
            ):
                skipped.add(id(root))
        elif isinstance(node, ast.comprehension):
            bound |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    return {
        n.id
        for n in ast.walk(expr)
        if isinstance(n, ast.Name)
        and isinstance(n.ctx, ast.Load)
        and id(n) not in skipped
        and n.id not in bound
    }


def _data_item(loop: ast.For | ast.AsyncFor, name: str) -> bool:
    """``name`` is what ``loop`` iterates over (``for batch in loader``, ``for i, (x, y) in
    enumerate(loader)``'s ``x``/``y``), not a counter (``range``, ``enumerate``'s index)."""
    it, target = loop.iter, loop.target
    callee = dotted(it.func) if isinstance(it, ast.Call) else None
    if callee == "range":
        return False
    if (
        callee == "enumerate"
        and isinstance(target, ast.Tuple)
        and target.elts
        and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target.elts[0]))
    ):
        return False
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))


def _enclosing_loop(ctx: FileContext, node: ast.AST) -> ast.For | ast.AsyncFor | None:
    """The innermost ``for`` holding ``node`` within its function."""
    cur = ctx.parents.get(node)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(cur, (ast.For, ast.AsyncFor)):
            return cur
        cur = ctx.parents.get(cur)
    return None


def _branches(ctx: FileContext, node: ast.AST) -> dict[int, str]:
    """For each ``if`` enclosing ``node`` (in its function), which branch holds it."""
    out: dict[int, str] = {}
    child, cur = node, ctx.parents.get(node)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(cur, ast.If):
            if child in cur.body:
                out[id(cur)] = "body"
            elif child in cur.orelse:
                out[id(cur)] = "orelse"
        child, cur = cur, ctx.parents.get(cur)
    return out


def _exclusive(a: dict[int, str], b: dict[int, str]) -> bool:
    """Two places in different branches of one ``if``: one never runs after the other."""
    return any(b.get(key, branch) != branch for key, branch in a.items())


def _loss_callee(call: ast.Call) -> bool:
    """A callee named as a loss (``compute_loss(out, y)``), not one handed the accumulation count or a
    divisor (mmf's ``extract_loss(report, loss_divisor)`` divides each term by it)."""
    name = (dotted(call.func) or "").split(".")[-1]
    return bool(LOSS_CALLEE.search(name)) and not NOT_RAW_CALLEE.search(name) and not _handed_divisor(call)


# An argument that names what a loss is divided by: the accumulation count, a divisor, a normaliser
DIVISOR_ARGUMENT = re.compile(r"divisor|accum|update_freq|normali[sz]er|num_items", re.IGNORECASE)


def _handed_divisor(call: ast.Call) -> bool:
    """``call`` is handed a value named as a divisor, by position or keyword (``loss_divisor``,
    ``args.accum_steps``, ``normalizer=n``): the callee may divide by it."""
    for arg in (*call.args, *(k.value for k in call.keywords)):
        if isinstance(arg, ast.Starred):
            arg = arg.value
        if isinstance(arg, (ast.Name, ast.Attribute)) and DIVISOR_ARGUMENT.search(
            (dotted(arg) or "").split(".")[-1]
        ):
            return True
    return any(k.arg is not None and DIVISOR_ARGUMENT.search(k.arg) for k in call.keywords)


def _loss_object_method(call: ast.Call) -> bool:
    """A method of an object named as a loss (``loss_function.calc(...)``, ``self.criterion.compute(...)``),
    neither of them a scaler or a normaliser (``loss_scaler.scale``, ``criterion.reduce``)."""
    if not isinstance(call.func, ast.Attribute):
        return False
    receiver = (dotted(call.func.value) or "").split(".")[-1]
    return (
        bool(LOSS_CALLEE.search(receiver))
        and not NOT_RAW_CALLEE.search(receiver)
        and not NOT_RAW_CALLEE.search(call.func.attr)
    )


def _weight(node: ast.AST) -> bool:
    """A per-sample or per-term weight (``weights``, ``self.lambda_kl``), or a size of the data
    (``targets.size(1)``, ``x.shape[0]``, ``len(batch)``, ``mask.numel()``: UNITER's instance-level
    BCE ``loss.mean() * targets.size(1)``) — a factor that is never the accumulation count."""
    if isinstance(node, ast.Call):
        m = method(node)
        if m is not None and m[1] in ("size", "numel", "nelement"):
            return True
        return dotted(node.func) == "len"
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
    name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
    return name is not None and bool(WEIGHT_FACTOR.search(name.split(".")[-1]))


WORLD_SIZE = re.compile(r"^(world_size|num_replicas|n_gpus?|num_gpus|ngpus|nprocs)$", re.IGNORECASE)


def _world_size(ctx: FileContext, node: ast.AST) -> bool:
    """The number of processes (``WORLD_SIZE``, ``args.world_size``, ``dist.get_world_size()``):
    a loss times it undoes DDP's mean over ranks (a contrastive loss over gathered features,
    CLIP-style), which leaves it as undivided by the accumulation count as before — never the
    count itself."""
    if isinstance(node, ast.Call):
        return (ctx.call_qualname(node) or dotted(node.func) or "").split(".")[-1] == "get_world_size"
    name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
    return name is not None and bool(WORLD_SIZE.match(name.split(".")[-1]))


def _forward_call(call: ast.Call) -> bool:
    """``call`` runs a model forward: ``model(x)``, ``self.net(x)``, ``ddp_model(x)``, or the model's
    own training-step method (VL-T5 ``results = self.model.module.train_step(batch)``, whose
    ``results["loss"]`` is the micro-batch's loss: a model cannot know the accumulation count)."""
    if FORWARD_CALLEE.search(dotted(call.func) or ""):
        return True
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in MODEL_STEPS:
        return False
    receiver = dotted(call.func.value) or ""
    receiver = receiver.removesuffix(".module")  # the DDP wrap's inner model
    return bool(FORWARD_CALLEE.search(receiver))


def _picked_calls(expr: ast.AST) -> list[ast.Call]:
    """The calls ``expr`` is: itself, or each branch of ``a(...) if c else b(...)``; [] otherwise."""
    if isinstance(expr, ast.Call):
        return [expr]
    if isinstance(expr, ast.IfExp):
        body, orelse = _picked_calls(expr.body), _picked_calls(expr.orelse)
        return body + orelse if body and orelse else []
    return []
