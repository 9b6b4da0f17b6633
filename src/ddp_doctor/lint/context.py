"""What a lint rule may know about one source file: its tree, import aliases and helpers.

Rules never match on raw text. ``FileContext.qualname`` resolves a call's target through the
file's imports (``from torch.nn.parallel import DistributedDataParallel as DDP`` makes
``DDP(...)`` resolve to ``torch.nn.parallel.DistributedDataParallel``), in the spirit of
TorchFix's qualified-name matching. The linted code is only parsed, never imported or run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

# Public spellings that name the same object; rules compare against the canonical (first) one.
_ALIASES: dict[str, str] = {
    "torch.nn.parallel.distributed.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel":
        "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed._composable.fsdp.fully_shard": "torch.distributed.fsdp.fully_shard",
    "torch.nn.utils.clip_grad.clip_grad_norm_": "torch.nn.utils.clip_grad_norm_",
    "torch.nn.utils.clip_grad.clip_grad_value_": "torch.nn.utils.clip_grad_value_",
    "torch.utils.data.dataloader.DataLoader": "torch.utils.data.DataLoader",
    "torch.utils.data.distributed.DistributedSampler": "torch.utils.data.DistributedSampler",
    "torch.cuda.amp.GradScaler": "torch.amp.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler": "torch.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler": "torch.amp.GradScaler",
    "torch.GradScaler": "torch.amp.GradScaler",
    "torch.amp.autocast_mode.autocast": "torch.amp.autocast",
    "torch.autocast": "torch.amp.autocast",
    "torch.nn.modules.batchnorm.BatchNorm1d": "torch.nn.BatchNorm1d",
    "torch.nn.modules.batchnorm.BatchNorm2d": "torch.nn.BatchNorm2d",
    "torch.nn.modules.batchnorm.BatchNorm3d": "torch.nn.BatchNorm3d",
    "torch.nn.modules.batchnorm.SyncBatchNorm": "torch.nn.SyncBatchNorm",
    "torch.half": "torch.float16",
    "accelerate.accelerator.Accelerator": "accelerate.Accelerator",
}


def canonical(name: str) -> str:
    return _ALIASES.get(name, name)


def dotted(node: ast.AST | None) -> str | None:
    """``a.b.c`` for a Name/Attribute chain (``self.model.no_sync``), else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def call_name(call: ast.AST) -> str | None:
    """The dotted text of what a Call calls (``optimizer.zero_grad``), else None."""
    return dotted(call.func) if isinstance(call, ast.Call) else None


def method(call: ast.AST) -> tuple[str | None, str] | None:
    """``(receiver text, method name)`` of ``recv.name(...)``; receiver is None when not dotted."""
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
        return dotted(call.func.value), call.func.attr
    return None


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def walk_local(nodes: ast.AST | list[ast.stmt]) -> Iterator[ast.AST]:
    """``ast.walk`` that does not enter nested function, lambda or class bodies."""
    stack: list[ast.AST] = list(nodes) if isinstance(nodes, list) else [nodes]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.append(child)


@dataclass
class FileContext:
    """One parsed file: tree, lines, resolved imports, functions by name, parent links."""

    path: str
    source: str
    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)
    functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = field(default_factory=dict)
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, path: str, source: str, tree: ast.Module) -> FileContext:
        ctx = cls(path=path, source=source, tree=tree, lines=source.splitlines())
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                ctx.parents[child] = node
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        ctx.imports[alias.asname] = alias.name
                    else:  # `import torch.nn` binds `torch`
                        head = alias.name.split(".")[0]
                        ctx.imports[head] = head
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        ctx.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                ctx.functions.setdefault(node.name, []).append(node)
        return ctx

    def qualname(self, node: ast.AST | None) -> str | None:
        """Qualified, canonical name of an imported object (``nn.BatchNorm2d`` → ``torch.nn.BatchNorm2d``)."""
        text = dotted(node)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        if head not in self.imports:
            return None
        full = self.imports[head] + ("." + rest if rest else "")
        return canonical(full)

    def call_qualname(self, call: ast.AST) -> str | None:
        return self.qualname(call.func) if isinstance(call, ast.Call) else None

    def imports_module(self, prefix: str) -> bool:
        return any(q == prefix or q.startswith(prefix + ".") for q in self.imports.values())

    def helper(self, call: ast.Call) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The same-file function a call runs: ``f(...)`` or ``self.f(...)``, when unambiguous."""
        func = call.func
        if isinstance(func, ast.Name):
            name = func.id
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
            name = func.attr
        else:
            return None
        defs = self.functions.get(name, [])
        return defs[0] if len(defs) == 1 else None

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.Module:
        cur = self.parents.get(node)
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            cur = self.parents.get(cur)
        return cur if cur is not None else self.tree

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or ""

    def indent_of(self, line: int) -> str:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return text[: len(text) - len(text.lstrip())]

    def scopes(self) -> Iterator[ast.Module | ast.FunctionDef | ast.AsyncFunctionDef]:
        """The module and every function: the units in which rules analyse statement order."""
        yield self.tree
        for defs in self.functions.values():
            yield from defs
