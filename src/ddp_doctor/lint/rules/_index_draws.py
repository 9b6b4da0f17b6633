"""sampler-missing without a DataLoader: batch positions drawn from torch's default generator.

nanoGPT-style scripts draw each batch by hand: ``ix = torch.randint(len(data) - block, (bs,))``
then ``torch.stack([data[i:i + block] for i in ix])`` (also ``perm = torch.randperm(len(data))``
then ``data[perm[...]]``). torch's default generator starts from the same fixed seed in every
process, so unless a process seeds it by rank (nanoGPT's ``torch.manual_seed(1337 + seed_offset)``
with ``seed_offset = ddp_rank``) every rank draws the same positions: the ranks train on the same
batches, the bug a missing DistributedSampler makes. Only draws whose bound is the length of what
their result then indexes count: a diffusion timestep ``torch.randint(0, T, (B,))`` indexes a noise
schedule, not the data.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ddp_doctor.lint.context import FileContext, dotted, keyword, parameter_names, word
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.rank0 import bound_argument
from ddp_doctor.lint.rules._data import loops_around

# Draws from torch's default generator (fixed default seed, the same in every process). numpy's and
# Python's global generators seed themselves from the OS, so their draws differ across ranks.
INDEX_DRAWS = frozenset({"torch.randint", "torch.randperm"})
RANK_WORDS = re.compile(r"rank|world|shard|replica|process_index|num_processes", re.IGNORECASE)
# Library seeding calls that never add the rank themselves; any other ``*seed*`` call (a project's
# ``init_seeds``) may, and is read when it is a def of this file, else trusted.
PLAIN_SEEDERS = frozenset(
    {
        "torch.manual_seed",
        "torch.random.manual_seed",
        "torch.cuda.manual_seed",
        "torch.cuda.manual_seed_all",
        "random.seed",
        "numpy.random.seed",
        "transformers.set_seed",
        "lightning.seed_everything",
        "pytorch_lightning.seed_everything",
        "lightning.pytorch.seed_everything",
    }
)
NAME_DEPTH = 3  # ``seed_offset = ddp_rank`` ... ``seed = base + seed_offset``: bindings rarely chain deeper


def shared_index_draws(
    ctx: FileContext, facts: LoopFacts
) -> Iterator[tuple[ast.Call, ast.For | ast.AsyncFor | ast.While]]:
    """``(draw, loop)``: a draw of batch positions from torch's default generator, in a file that
    never seeds it by rank, reached from ``loop``, a loop that backprops (the draw is in its body,
    or in a same-file def called there)."""
    draws = [c for c in ctx.of_type(ast.Call) if ctx.call_qualname(c) in INDEX_DRAWS]
    if not draws or _seeds_by_rank(ctx):
        return
    for draw in draws:
        if keyword(draw, "generator") is not None:
            continue  # its own generator: seeded wherever it is built
        data = _indexed_data(ctx, draw)
        if not data or _data_by_rank(ctx, draw, data):
            continue
        loop = _training_loop(ctx, facts, draw)
        if loop is not None:
            yield draw, loop


def _bound(draw: ast.Call) -> ast.expr | None:
    """The exclusive upper bound of the draw: ``randint(high, size)``, ``randint(low, high, size)``,
    ``randperm(n)``."""
    given = keyword(draw, "high") or keyword(draw, "n")
    if given is not None:
        return given
    name = dotted(draw.func) or ""
    if name.endswith("randperm"):
        return draw.args[0] if draw.args else None
    return draw.args[-2] if len(draw.args) in (2, 3) else None


def _lengths_in(ctx: FileContext, expr: ast.AST, scope: ast.AST) -> set[str]:
    """What ``expr`` takes the length of: ``len(x)``, ``x.shape[0]``, ``x.size(0)``, ``x.numel()``,
    also through a local name bound to such a value (``n = data.size(0)``)."""
    out: set[str] = set()
    todo: list[ast.AST] = [expr]
    seen: set[str] = set()
    for _ in range(NAME_DEPTH):
        more: list[ast.AST] = []
        for e in todo:
            for n in ast.walk(e):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and n.args:
                    out |= {d for d in (dotted(n.args[0]),) if d}
                elif isinstance(n, ast.Attribute) and n.attr in ("shape", "size", "numel"):
                    out |= {d for d in (dotted(n.value),) if d}
                elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in seen:
                    seen.add(n.id)
                    more += [b.value for b in ctx.bindings(scope).get(n.id, []) if isinstance(b, ast.Assign)]
        todo = more
    return out


def _indexed_data(ctx: FileContext, draw: ast.Call) -> set[str]:
    """The names the drawn positions index whose length bounds the draw (``data`` of ``data[i:i+n]
    for i in ix`` under ``ix = torch.randint(len(data) - n, ...)``)."""
    bound = _bound(draw)
    assign = ctx.parents.get(draw)
    if bound is None or not isinstance(assign, ast.Assign) or len(assign.targets) != 1:
        return set()
    if not isinstance(assign.targets[0], ast.Name):
        return set()
    scope = ctx.enclosing_function(draw)
    sized = _lengths_in(ctx, bound, scope)
    if not sized:
        return set()
    # the drawn name and what is derived from it: ``for i in ix``, ``idx = perm[k:k + bs]``
    derived = {assign.targets[0].id}
    for _ in range(NAME_DEPTH):
        for n in ctx.local(scope):
            source: ast.AST | None = None
            targets: list[ast.AST] = []
            if isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
                source, targets = n.iter, [n.target]
            elif isinstance(n, ast.Assign):
                source, targets = n.value, list(n.targets)
            if source is not None and _reads(source, derived):
                derived |= {t.id for tg in targets for t in ast.walk(tg) if isinstance(t, ast.Name)}
    return {
        base
        for n in ctx.local(scope)
        if isinstance(n, ast.Subscript) and (base := dotted(n.value)) in sized and _reads(n.slice, derived)
    }


def _reads(expr: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(expr))


def _reads_rank(ctx: FileContext, expr: ast.AST, depth: int = NAME_DEPTH) -> bool:
    """``expr`` reads a rank or world value (a name, an attribute, an environment key), itself or
    through names it reads, followed to their bindings anywhere in the file (nanoGPT: ``seed_offset =
    ddp_rank`` at module level)."""
    for n in ast.walk(expr):
        spelled = word(n)
        if spelled is None:
            continue
        if RANK_WORDS.search(spelled):
            return True
        if depth and isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            for a in ctx.of_type(ast.Assign):
                binds = any(
                    isinstance(t, ast.Name) and t.id == n.id for tg in a.targets for t in ast.walk(tg)
                )
                if binds and _reads_rank(ctx, a.value, depth - 1):
                    return True
    return False


def _seeds_by_rank(ctx: FileContext) -> bool:
    """Some process-seeding call of the file may differ by rank: its arguments read a rank (also
    accelerate's ``set_seed(seed, device_specific=True)``), or it is a seeding function that is not a
    plain library seeder (a def of this file that reads the rank, or one of another file, which may)."""
    for call in ctx.of_type(ast.Call):
        name = (dotted(call.func) or "").rsplit(".", 1)[-1]
        if "seed" not in name.lower():
            continue
        if any(_reads_rank(ctx, a) for a in [*call.args, *(k.value for k in call.keywords)]):
            return True
        if keyword(call, "device_specific") is not None:
            return True
        if ctx.call_qualname(call) in PLAIN_SEEDERS:
            continue
        fn = ctx.helper(call)
        if fn is None or any(
            RANK_WORDS.search(n.id if isinstance(n, ast.Name) else n.attr)
            for n in ast.walk(fn)
            if isinstance(n, (ast.Name, ast.Attribute))
        ):
            return True
    return False


def _data_by_rank(ctx: FileContext, draw: ast.Call, data: set[str]) -> bool:
    """The indexed data differs by rank: its bindings in the draw's function read a rank, or, for a
    parameter of that function, an argument a same-file call hands it does (``get_batch(shards[rank],
    ...)``)."""
    scope = ctx.enclosing_function(draw)
    binds = ctx.bindings(scope)
    for name in data:
        root = name.split(".")[0]
        if any(isinstance(b, ast.Assign) and _reads_rank(ctx, b.value) for b in binds.get(root, [])):
            return True
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and root in parameter_names(scope):
            for call in ctx.of_type(ast.Call):
                if ctx.helper(call) is scope:
                    given = bound_argument(scope, call, root)
                    if given is not None and _reads_rank(ctx, given, 1):
                        return True
    return False


def _training_loop(
    ctx: FileContext, facts: LoopFacts, draw: ast.Call
) -> ast.For | ast.AsyncFor | ast.While | None:
    """The loop that backprops on what the draw picks: a loop around the draw in its own function,
    or a loop around a same-file call of that function (``for step in ...: x, y = get_batch(...)``)."""
    for loop in loops_around(ctx, draw, through_lambdas=False):
        if facts.has_backward(loop.body):
            return loop if _counts_steps(ctx, loop) else None
    fn = ctx.enclosing_function(draw)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    for call in ctx.of_type(ast.Call):
        if ctx.helper(call) is fn:
            for loop in loops_around(ctx, call, through_lambdas=False):
                if facts.has_backward(loop.body):
                    if _counts_steps(ctx, loop):
                        return loop
                    break
    return None


STEP_COUNTERS = frozenset({"range", "trange", "count"})
STEP_WRAPPERS = frozenset({"tqdm", "enumerate", "iter"})


def _counts_steps(ctx: FileContext, loop: ast.AST) -> bool:
    """The training loop only counts steps (``while True:``, ``for step in range(max_iters)``, also
    through ``pbar = tqdm(range(n))``): its batches come from the draw. A loop over a DataLoader gets
    its batches there, and a draw inside it picks something else (a diffusion timestep)."""
    if isinstance(loop, ast.While):
        return True
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    it: ast.AST = loop.iter
    for _ in range(NAME_DEPTH):
        if isinstance(it, ast.Name):
            binds = ctx.bindings(ctx.enclosing_function(loop)).get(it.id, [])
            if len(binds) != 1 or not isinstance(binds[0], ast.Assign):
                return False
            it = binds[0].value
        elif isinstance(it, ast.Call):
            name = (dotted(it.func) or "").rsplit(".", 1)[-1]
            if name in STEP_COUNTERS:
                return True
            if name not in STEP_WRAPPERS or not it.args:
                return False
            it = it.args[0]
        else:
            return False
    return False
