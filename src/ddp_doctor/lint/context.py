"""What a lint rule may know about one source file: its tree, import aliases and helpers.

Rules never match on raw text. ``FileContext.qualname`` resolves a call's target through the
file's imports (``from torch.nn.parallel import DistributedDataParallel as DDP`` makes
``DDP(...)`` resolve to ``torch.nn.parallel.DistributedDataParallel``), in the spirit of
TorchFix's qualified-name matching. The linted code is only parsed, never imported or run.
"""

from __future__ import annotations

import ast
from ast import AST
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

# Public spellings that name the same object; rules compare against the canonical (first) one.
_ALIASES: dict[str, str] = {
    "torch.nn.parallel.distributed.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel": "torch.distributed.fsdp.FullyShardedDataParallel",
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
    # apex's DDP all-reduces the same way (hooks on backward): the same rules apply
    "apex.parallel.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "apex.parallel.distributed.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    # Ignite's `idist.auto_model(model)` wraps in DDP when the run is distributed (its other
    # keywords go to DDP); the same rules apply
    "ignite.distributed.auto_model": "torch.nn.parallel.DistributedDataParallel",
    "ignite.distributed.auto.auto_model": "torch.nn.parallel.DistributedDataParallel",
    "timm.models.create_model": "timm.create_model",
    "timm.models._factory.create_model": "timm.create_model",
    "timm.models.factory.create_model": "timm.create_model",
}


# Wrappers a conditional expression may stand for (one branch the wrapper, the other a no-op).
WRAPPERS = frozenset(
    {"torch.nn.parallel.DistributedDataParallel", "torch.distributed.fsdp.FullyShardedDataParallel"}
)


def canonical(name: str) -> str:
    return _ALIASES.get(name, name)


# The defs a file-level analysis runs over: a function or method, or the module itself.
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef


def dotted(node: ast.AST | None) -> str | None:
    """``a.b.c`` for a Name/Attribute chain (``self.model.no_sync``), else None. A key that is a
    constant identifier is part of the chain (``loaders['train']``, ``self.meters['loss'].avg``):
    the torchvision fine-tuning tutorial's ``dataloaders['train']`` is a name like any other."""
    parts: list[str] = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            parts.append(f".{node.attr}")
        elif (
            isinstance(key := node.slice, ast.Constant)
            and isinstance(key.value, str)
            and key.value.isidentifier()
        ):
            parts.append(f"[{key.value!r}]")
        else:
            return None
        node = node.value
    if isinstance(node, ast.Name):
        return node.id + "".join(reversed(parts))
    return None


def word(node: ast.AST) -> str | None:
    """The word a node spells: a name, an attribute's last part, or a string constant (the
    environment key of ``int(os.environ["RANK"])``); None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def conjuncts(test: ast.expr) -> list[ast.expr]:
    """The operands of an ``and`` test, or the test itself: what must all hold."""
    return list(test.values) if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]


def branches(value: ast.expr) -> list[ast.expr]:
    """The values a conditional expression may take, nested ones flattened (``DistributedSampler(ds)
    if ddp else None`` -> both; ``a if c else b if d else e`` -> a, b, e); any other value alone."""
    out: list[ast.expr] = [value]
    while isinstance(last := out[-1], ast.IfExp):
        out[-1:] = [last.body, last.orelse]
    return out


def holder(ctx: FileContext, node: ast.AST) -> tuple[ast.AST, ast.AST | None]:
    """``(outermost conditional, its parent)``: what holds ``node`` when it is a branch of a
    conditional expression (``sampler = None if rank == -1 else DistributedSampler(ds)`` holds the
    sampler whenever that branch runs); ``(node, parent)`` otherwise. Not through a test."""
    parent = ctx.parents.get(node)
    while isinstance(parent, ast.IfExp) and node is not parent.test:
        node, parent = parent, ctx.parents.get(parent)
    return node, parent


def names_a_class(qualname: str) -> bool:
    """The last part of ``qualname`` is named like a class: ``ResNet``, also a private one (``_VGG``)."""
    return qualname.rsplit(".", 1)[-1].lstrip("_")[:1].isupper()


def next_in_block(ctx: FileContext, stmt: ast.AST) -> ast.stmt | None:
    """The statement right after ``stmt`` in the block (``body``/``orelse``/``finalbody``) that
    holds it; None when ``stmt`` ends its block or is in none."""
    holder = ctx.parents.get(stmt)
    for part in ("body", "orelse", "finalbody"):
        block = getattr(holder, part, None)
        if isinstance(block, list) and stmt in block:
            index = block.index(stmt)
            following = block[index + 1] if index + 1 < len(block) else None
            return following if isinstance(following, ast.stmt) else None
    return None


def init_of(cls: ast.ClassDef) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The ``__init__`` the class itself defines (not one it inherits)."""
    return next(
        (
            f
            for f in cls.body
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == "__init__"
        ),
        None,
    )


def parameter_names(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[str]:
    """The names of ``fn``'s parameters, positional and keyword-only, in order (not ``*args`` and
    ``**kwargs``)."""
    return [a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]


def param_defaults(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr]:
    """Each parameter of ``fn`` that has a default, with its default expression (positional ones
    take the trailing defaults; keyword-only ones theirs)."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    out = dict(zip([x.arg for x in positional[len(positional) - len(a.defaults) :]], a.defaults))
    out |= {x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None}
    return out


def is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either side): the test of a script's entry block."""
    if not isinstance(test, ast.Compare):
        return False
    parts = [test.left, *test.comparators]
    return any(isinstance(p, ast.Name) and p.id == "__name__" for p in parts) and any(
        isinstance(p, ast.Constant) and p.value == "__main__" for p in parts
    )


def positional_params(fn: ast.FunctionDef | ast.AsyncFunctionDef, *, bound: bool = True) -> list[str]:
    """The parameter names a call fills by position, in order: without a method's leading
    ``self``/``cls`` when ``bound`` (the instance or class fills it: ``obj.run(x)``, ``self.run(x)``)."""
    names = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    return names[1:] if bound and names and names[0] in ("self", "cls") else names


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


NodeT = TypeVar("NodeT", bound=ast.AST)

SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
# Fields holding shared singleton nodes (Load/Store, operators): read them as attributes, never
# index them — the same object sits under every Name/BinOp of the file.
_SHARED_FIELDS = frozenset({"ctx", "op", "ops"})
_FIELDS_CACHE: dict[type, tuple[str, ...]] = {}


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
    nodes: list[ast.AST] = field(default_factory=list)  # every node, walked once
    _local: dict[int, list[ast.AST]] = field(default_factory=dict)
    _bindings: dict[int, dict[str, list[ast.stmt | ast.expr]]] = field(default_factory=dict)
    _qualnames: dict[int, str | None] = field(default_factory=dict)
    _owner: dict[int, int] = field(default_factory=dict)  # node -> innermost def/lambda/class (or module)
    _end: dict[int, int] = field(default_factory=dict)  # node -> end of its subtree in `nodes`
    _pos: dict[int, int] = field(default_factory=dict)  # node -> its index in `nodes`
    _by_type: dict[type, list[ast.AST]] = field(default_factory=dict)
    _calls_by_name: dict[str, list[ast.Call]] | None = None
    _top_classes: dict[str, list[ast.ClassDef]] | None = None  # top-level classes by name (lazy)
    _subclassing: set[str] = field(default_factory=set)  # class names whose bases are being resolved
    star_imports: bool = False  # ``from utils.dist import *``: names may come from a project module
    # Per-file caches of analyses defined in other modules, each keyed by a tuple that starts with the
    # function computing it and holds every input it depends on (lint/logged_attributes.py).
    memo: dict[tuple[object, ...], Any] = field(default_factory=dict)
    words: set[str] = field(default_factory=set)  # every identifier, attribute, keyword and import part
    # Project mode (lint/project.py): the directory's summaries, this file's module name and its
    # import table with relative imports made absolute. None/empty when linting a lone file.
    project: Any = None
    module: str | None = None
    absolute_imports: dict[str, str] = field(default_factory=dict)
    # An alias bound to different imports in different branches (FixMatch ``import
    # models.wideresnet as models`` / ``import models.resnext as models``): resolved by neither in
    # ``imports``; kept here so project mode can pick the one module that defines the attribute used.
    import_choices: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def build(cls, path: str, source: str, tree: ast.Module) -> FileContext:
        ctx = cls(path=path, source=source, tree=tree, lines=source.splitlines())
        # One iterative depth-first pass. Preorder makes every subtree a contiguous slice of
        # `nodes`, so `local()` is a slice filtered by owner instead of a fresh tree walk.
        nodes, parents, owner, end, pos = ctx.nodes, ctx.parents, ctx._owner, ctx._end, ctx._pos
        by_type = ctx._by_type
        stack: list[tuple[ast.AST, ast.AST, bool]] = [(tree, tree, False)]
        fields_of = _FIELDS_CACHE
        push, add = stack.append, nodes.append
        while stack:
            node, own, leaving = stack.pop()
            key = id(node)
            if leaving:
                end[key] = len(nodes)
                continue
            kind = type(node)
            pos[key] = len(nodes)
            owner[key] = id(own)
            add(node)
            bucket = by_type.get(kind)
            if bucket is None:
                by_type[kind] = bucket = []
            bucket.append(node)
            names = fields_of.get(kind)
            if names is None:
                names = fields_of[kind] = tuple(f for f in kind._fields if f not in _SHARED_FIELDS)
            children: list[ast.AST] = []
            for name in names:
                value = getattr(node, name, None)
                if type(value) is list:
                    children += [v for v in value if isinstance(v, AST)]
                elif isinstance(value, AST):
                    children.append(value)
            if not children:  # a leaf: its subtree ends right here, no exit marker needed
                end[key] = len(nodes)
                continue
            push((node, own, True))
            child_owner = node if kind in SCOPE_NODES else own
            for child in reversed(children):
                parents[child] = node
                push((child, child_owner, False))
        words = ctx.words
        words.update(n.id for n in ctx.of_type(ast.Name))
        words.update(n.attr for n in ctx.of_type(ast.Attribute))
        words.update(n.arg for n in ctx.of_type(ast.keyword) if n.arg)
        targets: dict[str, set[str]] = {}
        for node in ctx.of_type(ast.Import):
            for alias in node.names:
                if alias.asname:
                    ctx.imports[alias.asname] = alias.name
                    targets.setdefault(alias.asname, set()).add(canonical(alias.name))
                else:  # `import torch.nn` binds `torch`
                    head = alias.name.split(".")[0]
                    ctx.imports[head] = head
        for node in ctx.of_type(ast.ImportFrom):
            ctx.star_imports = ctx.star_imports or any(alias.name == "*" for alias in node.names)
            if node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        name = alias.asname or alias.name
                        ctx.imports[name] = f"{node.module}.{alias.name}"
                        targets.setdefault(name, set()).add(canonical(ctx.imports[name]))
        # One alias bound to different objects in two branches (``if ddp: from ... import
        # DistributedSampler as S`` / ``else: from ... import RandomSampler as S``): which one runs is a
        # runtime choice, so the name resolves to neither. Two spellings of one object stay resolved
        # (apex's or torch's DDP under try/except both mean DDP).
        for name, found in targets.items():
            if len(found) > 1:
                del ctx.imports[name]
                ctx.import_choices[name] = tuple(sorted(found))
        for node in ctx.of_type(ast.FunctionDef) + ctx.of_type(ast.AsyncFunctionDef):
            ctx.functions.setdefault(node.name, []).append(node)
        for target in ctx.imports.values():
            words.update(target.split("."))
        return ctx

    def position(self, node: ast.AST) -> int:
        """Index of ``node`` in the preorder ``nodes`` list."""
        return self._pos[id(node)]

    def subtree_end(self, node: ast.AST) -> int:
        """One past the last preorder index of ``node``'s subtree."""
        return self._end[id(node)]

    def within(self, node: ast.AST, region: ast.AST) -> bool:
        """``node`` lies in ``region``'s subtree (``region`` included), by their places in the walk."""
        return self.position(region) <= self.position(node) < self.subtree_end(region)

    def of_type(self, kind: type[NodeT]) -> list[NodeT]:
        """Every node of exactly this type (``ast.Call``, ``ast.Assign`` ...), in source preorder."""
        return self._by_type.get(kind, [])  # type: ignore[return-value]  # _by_type holds kind's nodes

    def calls_named(self, name: str) -> list[ast.Call]:
        """Every call whose callee is spelled ``name`` or ``<anything>.name``, in source preorder.

        Built once per file on first use: a rule that asks this for each function of the file would
        otherwise scan every call once per function (quadratic on a file of 20,000 defs)."""
        if self._calls_by_name is None:
            index: dict[str, list[ast.Call]] = {}
            for call in self.of_type(ast.Call):
                func = call.func
                if isinstance(func, ast.Name):
                    index.setdefault(func.id, []).append(call)
                elif isinstance(func, ast.Attribute):
                    index.setdefault(func.attr, []).append(call)
            self._calls_by_name = index
        return self._calls_by_name.get(name, [])

    def mentions(self, *names: str) -> bool:
        """Any of ``names`` appears as an identifier, attribute, keyword or import part: a cheap
        pre-check that lets a rule skip files that cannot contain its pattern."""
        return any(n in self.words for n in names)

    def qualname(self, node: ast.AST | None) -> str | None:
        """Qualified, canonical name of an imported object (``nn.BatchNorm2d`` → ``torch.nn.BatchNorm2d``)."""
        key = id(node)
        if key not in self._qualnames:
            self._qualnames[key] = self._qualname(node)
        return self._qualnames[key]

    def _qualname(self, node: ast.AST | None) -> str | None:
        if isinstance(node, ast.IfExp):
            # ``(DDP if dist.initialized() else NullDDP)(model)`` (VAR): the data-parallel wrapper
            # whenever training is distributed, which is the premise of every rule that asks
            found = {q for q in (self.qualname(node.body), self.qualname(node.orelse)) if q}
            return found.pop() if len(found) == 1 and found <= WRAPPERS else None
        text = dotted(node)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        if head not in self.imports:
            alias = self._class_alias(node, head) if isinstance(node, ast.Name) else None
            if alias is None and isinstance(node, ast.Name):
                alias = self.wrapper_subclass(head)
            if (
                alias is None
                and isinstance(node, ast.Name)
                and self.project is not None
                and self.star_imports
            ):
                alias = self.project.star_wrapper(self, head)  # a subclass from ``from utils.dist import *``
            return alias  # ``ddp = torch.nn.parallel.DistributedDataParallel`` ... ``ddp(module=model)``
        full = self.imports[head] + ("." + rest if rest else "")
        if self.project is not None and "." in full:
            outside = self.project.reexport(full)  # ``ext_dist.DDP``: a project module's import
            if isinstance(outside, str):
                full = outside
        return canonical(full)

    def wrapper_subclass(self, name: str) -> str | None:
        """The data-parallel wrapper a top-level class of this file subclasses (NATSpeech ``class
        DDP(DistributedDataParallel)`` overriding ``forward``): constructing it is that wrap."""
        found = {q for q in self.base_qualnames(name) if q in WRAPPERS}
        return found.pop() if len(found) == 1 else None

    def base_qualnames(self, name: str) -> set[str]:
        """The dotted imports the bases of the one top-level class ``name`` of this file resolve to
        (``class MyDDPStrategy(strategies.DDPStrategy)``); empty when ``name`` is no such class."""
        if self._top_classes is None:
            self._top_classes = {}
            for c in self.tree.body:
                if isinstance(c, ast.ClassDef):
                    self._top_classes.setdefault(c.name, []).append(c)
        classes = self._top_classes.get(name, [])
        if len(classes) != 1 or name in self._subclassing:
            return set()
        self._subclassing.add(name)  # ``class A(B)`` / ``class B(A)``: no endless resolution
        try:
            return {q for b in classes[0].bases if (q := self.qualname(b))}
        finally:
            self._subclassing.discard(name)

    def _class_alias(self, node: ast.Name, name: str) -> str | None:
        """The imported name a local variable is bound to when every binding of it in its function
        assigns the same dotted import (``ddp = torch.nn.parallel.DistributedDataParallel``)."""
        if not self.parents.get(node):
            return None
        binds = self.bindings(self.enclosing_function(node)).get(name, [])
        values = {
            self.qualname(b.value)
            for b in binds
            if isinstance(b, ast.Assign) and isinstance(b.value, ast.Attribute)
        }
        if len(binds) != 1 or len(values) != 1:
            return None
        return values.pop()

    def call_qualname(self, call: ast.AST) -> str | None:
        return self.qualname(call.func) if isinstance(call, ast.Call) else None

    def imports_module(self, prefix: str) -> bool:
        return any(q == prefix or q.startswith(prefix + ".") for q in self.imports.values())

    def uses_module(self, prefix: str) -> bool:
        """The file refers to the module (or something in it) outside its imports: a leftover
        ``import torch.distributed as dist`` that nothing calls does not make a script distributed."""
        if not self.imports_module(prefix):
            return False
        nodes: list[ast.AST] = [*self.of_type(ast.Name), *self.of_type(ast.Attribute)]
        for node in nodes:
            name = self.qualname(node)
            if name is not None and (name == prefix or name.startswith(prefix + ".")):
                return True
        return False

    def helper(self, call: ast.Call) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The same-file function a call runs: ``f(...)`` or ``self.f(...)``, when unambiguous."""
        func = call.func
        if isinstance(func, ast.Name):
            name = func.id
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls")
        ):
            name = func.attr
        else:
            return None
        defs = self.functions.get(name, [])
        if len(defs) > 1 and isinstance(func, ast.Attribute):
            # ``self.f(...)`` with several classes defining ``f``: the one of the caller's own class
            owner = self._owner_class(call)
            defs = [d for d in defs if owner is not None and self.parents.get(d) is owner]
        elif len(defs) > 1:
            return self.scoped_def(call, name)
        return defs[0] if len(defs) == 1 else None

    def scoped_def(self, node: ast.AST, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The function ``name`` means at ``node`` when several are defined: Python's scoping picks
        the one nested in the innermost enclosing function (MACE's ``take_step`` and
        ``take_step_lbfgs`` each define their own ``closure``). None when none of them is."""
        defs = self.functions.get(name, [])
        if len(defs) == 1:
            return defs[0]
        scope: ast.AST = self.enclosing_function(node)
        while isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            here = [d for d in defs if d is not scope and self.enclosing_function(d) is scope]
            if len(here) == 1:
                return here[0]
            if here:
                return None
            scope = self.enclosing_function(scope)
        return None

    def _owner_class(self, node: ast.AST) -> ast.ClassDef | None:
        fn = self.enclosing_function(node)
        parent = self.parents.get(fn)
        return parent if isinstance(parent, ast.ClassDef) else None

    def method_owner(self, fn: ast.AST) -> ast.ClassDef | None:
        """The top-level class of this file whose method ``fn`` is; None for a function, a nested def or
        a method of a nested class (the project index names the methods of top-level classes only)."""
        owner = self.parents.get(fn)
        if (
            isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            and isinstance(owner, ast.ClassDef)
            and self.parents.get(owner) is self.tree
        ):
            return owner
        return None

    def enclosing_method_class(self, node: ast.AST) -> ast.ClassDef | None:
        """The top-level class whose method holds ``node`` (``method_owner`` of its function)."""
        return self.method_owner(self.enclosing_function(node))

    def def_qualname(self, fn: ast.AST) -> str | None:
        """The project index's name of ``fn``: ``module.f`` for a top-level function, ``module.C.f`` for a
        method of a top-level class; None for any other def or when the file's module is unknown."""
        if self.module is None or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        if self.parents.get(fn) is self.tree:
            return f"{self.module}.{fn.name}"
        owner = self.method_owner(fn)
        return f"{self.module}.{owner.name}.{fn.name}" if owner is not None else None

    def constructors(self, call: ast.Call) -> list[ast.expr] | None:
        """For ``obj.m(...)``: the callee of every binding of ``obj`` in the calling scope (``trainer =
        Trainer(...)`` gives ``Trainer``): which class's method runs. None when ``call`` is not of that
        shape or a binding is not a plain ``obj = Call(...)`` (an unpacked tuple is not an instance of
        the callee). A rebinding to an item of a loaded checkpoint (``tbLogger =
        checkpoint["tb_logger"]`` on resume, vilbert) restores an instance pickled from that same class
        and is skipped."""
        func = call.func
        if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            return None
        out: list[ast.expr] = []
        for b in self.bindings(self.enclosing_function(call)).get(func.value.id, []):
            if isinstance(b, ast.Assign) and _checkpoint_item(b.value):
                continue
            if not (
                isinstance(b, ast.Assign)
                and isinstance(b.value, ast.Call)
                and any(isinstance(t, ast.Name) and t.id == func.value.id for t in b.targets)
            ):
                return None
            out.append(b.value.func)
        return out

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.Module:
        cur = self.parents.get(node)
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            cur = self.parents.get(cur)
        return cur if cur is not None else self.tree

    def names_of(self, node: ast.AST) -> set[str]:
        """``{dotted(node)}``; a subscript whose key is a loop variable over literal keys names each
        entry: ``dataloaders[phase]`` under ``for phase in ["train", "val"]`` (or in ``{x:
        DataLoader(...) for x in ["train", "val"]}``) is ``dataloaders['train']`` and
        ``dataloaders['val']`` (the torchvision fine-tuning tutorial's loaders by phase)."""
        if (d := dotted(node)) is not None:
            return {d}
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name)):
            return set()
        base = dotted(node.value)
        keys = self.literal_keys(node.slice) if base is not None else ()
        return {f"{base}[{k!r}]" for k in keys}

    def literal_keys(self, name: ast.Name) -> tuple[str, ...]:
        """The identifier strings the loop or comprehension that binds ``name`` walks (``for phase in
        ("train", "val")``), or ``()``."""
        child: ast.AST = name
        cur = self.parents.get(name)
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if isinstance(cur, (ast.DictComp, ast.ListComp, ast.SetComp, ast.GeneratorExp)):
                binders: list[tuple[ast.expr, ast.expr]] = [(g.target, g.iter) for g in cur.generators]
            elif isinstance(cur, (ast.For, ast.AsyncFor)) and child is not cur.iter:
                binders = [(cur.target, cur.iter)]
            else:
                binders = []
            for target, walked in binders:
                if isinstance(target, ast.Name) and target.id == name.id:
                    elts = walked.elts if isinstance(walked, (ast.List, ast.Tuple, ast.Set)) else []
                    keys = tuple(
                        e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
                    )
                    return (
                        keys
                        if keys and len(keys) == len(elts) and all(k.isidentifier() for k in keys)
                        else ()
                    )
            child, cur = cur, self.parents.get(cur)
        return ()

    def local(self, node: ast.AST) -> list[ast.AST]:
        """``walk_local`` of a function's body (or of one statement), computed once."""
        key = id(node)
        if key not in self._local:
            if key not in self._pos:  # not part of this file's tree
                return list(walk_local(node))
            start, stop = self._pos[key], self._end[key]
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
                start, want = start + 1, key  # the body (and signature), not the def itself
            else:
                want = self._owner[key]
            owner, nodes = self._owner, self.nodes
            self._local[key] = [n for n in nodes[start:stop] if owner[id(n)] == want]
        return self._local[key]

    def bindings(self, scope: ast.AST) -> dict[str, list[ast.stmt | ast.expr]]:
        """Name -> statements of ``scope`` that bind it (assign, augassign, for, with-as), in order."""
        key = id(scope)
        if key not in self._bindings:
            out: dict[str, list[ast.stmt | ast.expr]] = {}
            for node in self.local(scope):
                if isinstance(node, ast.Assign):
                    targets: list[ast.AST] = list(node.targets)
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
                    targets = [node.target]
                elif isinstance(node, (ast.With, ast.AsyncWith)):
                    targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
                else:
                    continue
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            out.setdefault(n.id, []).append(node)
            for defs in out.values():
                defs.sort(key=lambda n: (n.lineno, n.col_offset))
            self._bindings[key] = out
        return self._bindings[key]

    def segment(self, node: ast.AST) -> str:
        """Source text of ``node`` (like ``ast.get_source_segment`` without re-splitting the file)."""
        try:
            start, end = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
            col, end_col = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
        except AttributeError:
            return ""
        raw = [line.encode("utf-8") for line in self.lines[start - 1 : end]]
        if not raw or end_col is None:
            return ""
        if len(raw) == 1:
            return raw[0][col:end_col].decode("utf-8", errors="replace")
        raw[0], raw[-1] = raw[0][col:], raw[-1][:end_col]
        return b"\n".join(raw).decode("utf-8", errors="replace")

    def indent_of(self, line: int) -> str:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return text[: len(text) - len(text.lstrip())]

    def scopes(self) -> Iterator[ast.Module | ast.FunctionDef | ast.AsyncFunctionDef]:
        """The module and every function: the units in which rules analyse statement order."""
        yield self.tree
        for defs in self.functions.values():
            yield from defs


def other_branch(ctx: FileContext, node: ast.AST, other: ast.AST) -> bool:
    """``node`` and ``other`` sit in different branches of one ``if``: one never runs after the other."""
    branches: dict[int, bool] = {}
    child, cur = other, ctx.parents.get(other)
    while cur is not None:
        if isinstance(cur, ast.If) and child is not cur.test:
            branches[id(cur)] = child in cur.body
        child, cur = cur, ctx.parents.get(cur)
    child, cur = node, ctx.parents.get(node)
    while cur is not None:
        if isinstance(cur, ast.If) and child is not cur.test and id(cur) in branches:
            return branches[id(cur)] != (child in cur.body)
        child, cur = cur, ctx.parents.get(cur)
    return False


def _checkpoint_item(value: ast.expr) -> bool:
    """``checkpoint["tb_logger"]``: a string-keyed item of a name that says it holds a checkpoint."""
    return (
        isinstance(value, ast.Subscript)
        and isinstance(value.slice, ast.Constant)
        and isinstance(value.slice.value, str)
        and any(w in (dotted(value.value) or "").lower() for w in ("checkpoint", "ckpt", "state"))
    )
