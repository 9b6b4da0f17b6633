"""sampler-missing: a training DataLoader in a DDP/FSDP script with no sampler and no sharding.

Without a DistributedSampler (or equivalent sharding) every rank iterates the full dataset, so
the global batch holds world-size copies of each sample (torch docs, DistributedSampler). To stay
precise, a DataLoader is flagged only when all hold: the file wraps a model in DDP/FSDP; the
loader gets no ``sampler``/``batch_sampler``; a loop that backprops iterates it; the dataset's
construction mentions no rank/world/shard (per-rank seeds or file shards are valid sharding); the
dataset is not an IterableDataset (those usually shard themselves); and neither accelerate's
``prepare`` (which shards loaders) nor Lightning (which adds the sampler) is in use.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ddp_doctor.lint.context import FileContext, dotted, keyword
from ddp_doctor.lint.loops import LoopFacts
from ddp_doctor.lint.rules._data import DATALOADER, bound_names, trains_on
from ddp_doctor.lint.rules.base import Rule, Violation

DATA_PARALLEL = (
    "torch.nn.parallel.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_shard",
)
SHARDING_WORDS = re.compile(
    r"rank|world|shard|replica|process_index|num_processes|split_dataset_by_node", re.IGNORECASE
)
SAMPLER_POSITION = 3  # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)


class SamplerMissing(Rule):
    id = "sampler-missing"
    required = (("DataLoader",), tuple(q.split(".")[-1] for q in DATA_PARALLEL))
    required_in_project = (("DataLoader",),)

    def check(self, ctx: FileContext, facts: LoopFacts) -> Iterator[Violation]:
        if facts.prepared or ctx.imports_module("lightning") or ctx.imports_module("pytorch_lightning"):
            return
        calls = ctx.of_type(ast.Call)
        if not any(ctx.call_qualname(c) in DATA_PARALLEL for c in calls) and not (
            ctx.project is not None and ctx.project.wraps_ddp
        ):
            return  # no DDP/FSDP wrap in this file (or, in project mode, anywhere in the project)
        for call in calls:
            if ctx.call_qualname(call) != DATALOADER or len(call.args) > SAMPLER_POSITION:
                continue
            if keyword(call, "sampler") is not None or keyword(call, "batch_sampler") is not None:
                continue
            if any(k.arg is None for k in call.keywords) or any(
                isinstance(a, ast.Starred) for a in call.args
            ):
                continue  # DataLoader(ds, **kwargs): the sampler may be in there
            dataset = call.args[0] if call.args else keyword(call, "dataset")
            if dataset is None or _sharded(ctx, dataset):
                continue
            names = bound_names(ctx, call)
            if not trains_on(facts, names):
                continue
            yield self.violation(
                call,
                f"`{ctx.segment(call).splitlines()[0]}` has no DistributedSampler and the dataset is not "
                "sharded by rank: every rank trains on the same samples.",
                "该 DataLoader 没有 DistributedSampler，数据集也未按 rank 分片：每个 rank 都在相同的样本上训练。",
                loader=sorted(names),
            )


def _sharded(ctx: FileContext, dataset: ast.expr) -> bool:
    """The dataset expression or its construction mentions ranks/shards, or it is iterable-style."""
    exprs: list[ast.AST] = [dataset]
    name = dotted(dataset)
    if name:
        exprs += [n.value for n in ctx.of_type(ast.Assign) if any(dotted(t) == name for t in n.targets)]
    for expr in exprs:
        for node in ast.walk(expr):
            word = (
                node.id
                if isinstance(node, ast.Name)
                else node.attr
                if isinstance(node, ast.Attribute)
                else node.value
                if isinstance(node, ast.Constant) and isinstance(node.value, str)
                else None
            )
            if word and SHARDING_WORDS.search(word):
                return True
            if isinstance(node, ast.Call) and _self_sharding_class(ctx, node):
                return True
    return False


def _self_sharding_class(ctx: FileContext, call: ast.Call) -> bool:
    """``call`` builds a class of this file that is iterable-style or reads the rank itself."""
    qual = ctx.call_qualname(call) or ""
    if "IterableDataset" in qual:
        return True
    if not isinstance(call.func, ast.Name):
        return False
    for node in ctx.of_type(ast.ClassDef):
        if node.name == call.func.id:
            if any("IterableDataset" in (dotted(b) or "") for b in node.bases):
                return True
            return any(
                SHARDING_WORDS.search(n.id if isinstance(n, ast.Name) else n.attr)
                for n in ast.walk(node)
                if isinstance(n, (ast.Name, ast.Attribute))
            )
    return False
