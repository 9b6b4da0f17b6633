"""Files as modules of a project: module names from paths, import tables with relative imports
made absolute, parsing with a cheap text pre-check, the defs a file summarises, and attaching a
file's context to the index (lint/project.py). Plain functions over paths and trees.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING

from ddp_doctor.lint.context import FileContext
from ddp_doctor.lint.source import parse_python, read_source

# Words a file must contain to hold any fact worth summarising (cheap text pre-check).
FACT_WORDS = (
    "DistributedDataParallel",
    "DistributedSampler",  # a loader builder returning a sampled DataLoader (hysts create_dataloader)
    "DataLoader",  # ... or one drawing without a sampler (cloud-phase-prediction prepare_data)
    "FullyShardedDataParallel",
    "fully_shard",
    "backward",
    "BatchNorm",
    "GradScaler",
    "FP16Optimizer",  # fairseq's loss-scaling optimizers (idioms.LOSS_SCALING_OPTIMIZER)
    "FP16_Optimizer",  # apex/Megatron/DeepSpeed's
    "no_sync",
    "require_backward_grad_sync",
    "Module",
    "rank",
    "RANK",
    "Rank",
    "main_process",
    "master",
    "compile",  # a helper returning torch.compile(m)
    "odel",  # model/Model: builders that only compose project classes (``return YOLOX(...)``)
    "riter",  # writer/Writer, add_scalar's owner: project loggers that log their arguments
    "ogger",  # logger/Logger
    # ImageNet's ``ProgressMeter`` printing the ``AverageMeter``s it was built with (lint/state_logs.py),
    # in a file of its own that names nothing above (cl_vad's ``clvad/classifier/utils/meter.py``)
    "Meter",
    "wandb",
    "sync",  # a meter whose update reduces (``sync_tensor``, ``synchronize``)
    "reduce",
    "float16",  # a dtype property or helper returning torch.float16
)

if TYPE_CHECKING:  # types only: the index is built on these functions
    from ddp_doctor.lint.project_core import IndexCore


LOCAL_KEY = "\0module"  # entry of an import table naming the file's own module


MAX_FILE_BYTES = 2_000_000


def defs_of(
    module: str, tree: ast.Module
) -> tuple[
    list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]],
    list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]],
]:
    """Top-level defs and classes, then the methods of the classes (also returned alone)."""
    defs: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]] = []
    methods: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs.append((f"{module}.{node.name}", node))
        if isinstance(node, ast.ClassDef):
            methods += [
                (f"{module}.{node.name}.{b.name}", b)
                for b in node.body
                if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
    return defs + methods, methods


def parse_file(path: Path, words: tuple[str, ...] = ()) -> FileContext | None:
    """The file's context, or None when it cannot be read or parsed or (``words``) mentions none of
    them (the cheap text pre-check)."""
    try:
        source, _ = read_source(path)
    except (OSError, ValueError):
        return None
    if words and not any(w in source for w in words):
        return None
    try:
        return FileContext.build(str(path), source, parse_python(source, str(path)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def absolute_module(node: ast.ImportFrom, module: str) -> str | None:
    if not node.level:
        return node.module
    package = module.split(".")[:-1]
    if node.level - 1 > len(package):
        return None
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])]) or None


def module_name(root: Path, path: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or path.stem


def module_level_names(tree: ast.Module) -> set[str]:
    return {
        t.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }


def is_test_module(module: str) -> bool:
    """A test module (``tests/...``, ``test_x``, ``x_test``, ``conftest``): not the training code."""
    parts = module.split(".")
    return (
        any(p in ("test", "tests") for p in parts[:-1])
        or parts[-1].startswith("test_")
        or parts[-1].endswith("_test")
        or parts[-1] == "conftest"
    )


def module_level_imports(tree: ast.Module) -> set[str]:
    """Names bound by the module's own import statements (also under a top-level ``try``/``if``)."""
    out: set[str] = set()
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        elif isinstance(node, ast.Try):
            stack += [*node.body, *node.orelse, *(s for h in node.handlers for s in h.body)]
        elif isinstance(node, ast.If):
            stack += [*node.body, *node.orelse]
    return out


def relative_base(ctx: FileContext, module: str) -> str:
    """What a relative import of ``ctx`` is relative to: a package's ``__init__.py`` imports
    ``from .ssd_detector import SSDDetector`` from inside itself (lufficc SSD's
    ``ssd/modeling/detector/__init__.py``), a module from its own package."""
    if Path(ctx.path).name == "__init__.py" and not module.endswith(".__init__"):
        return module + ".__init__"
    return module


def absolute_imports(ctx: FileContext, module: str) -> dict[str, str]:
    """The file's import table with relative imports made absolute (``from .misc import x``)."""
    out = dict(ctx.imports)
    package = relative_base(ctx, module).split(".")[:-1]
    for node in ctx.of_type(ast.ImportFrom):
        if not node.level:
            continue
        base = package[: len(package) - (node.level - 1)] if node.level - 1 <= len(package) else []
        prefix = ".".join([*base, *([node.module] if node.module else [])])
        for alias in node.names:
            if alias.name != "*":
                out[alias.asname or alias.name] = f"{prefix}.{alias.name}" if prefix else alias.name
    return out


def sibling_imports(
    ctx: FileContext,
    imports: dict[str, str],
    module: str,
    resolve: Callable[[str], str | None],
    heads: Collection[str],
) -> dict[str, str]:
    """``from models import Backbone`` in ``ddp/learner.py`` of a repository that also has
    ``single_GPU/models.py``: Python runs the script from its own directory (``sys.path[0]``), so
    the import names the sibling ``ddp.models``. Rewrites the file's own absolute imports (not its
    relative ones) whose first part starts no module of the project (``heads``) but names a module
    beside the file."""
    package = module.rpartition(".")[0]
    if not package:
        return imports
    out = dict(imports)
    for name, full in ctx.imports.items():
        head = full.partition(".")[0]
        if imports.get(name) != full or head in heads or not head.isidentifier():
            continue
        sibling = f"{package}.{head}"
        if sibling != module and _beside(f"{package}.{full}", sibling, resolve):
            out[name] = f"{package}.{full}"
    return out


def _beside(imported: str, sibling: str, resolve: Callable[[str], str | None]) -> bool:
    """The sibling module or package beside the file is what ``imported`` names: the sibling itself
    resolves, or (a namespace package without ``__init__.py``: RNGDet++'s ``cityscale/models/detr``)
    a module inside it that the import names does."""
    if resolve(sibling) == sibling:
        return True
    parts = imported.split(".")
    depth = sibling.count(".") + 1
    return any(resolve(".".join(parts[:n])) == ".".join(parts[:n]) for n in range(depth + 1, len(parts) + 1))


def star_names(index: IndexCore, source: str) -> dict[str, str]:
    """``{name: outside qualname}`` of what the project module ``source`` imports from outside the
    project at module level: what ``from source import *`` hands on. Read from the index's
    re-exports, or (a module the index skipped: no word of a fact in it) from the file itself, once."""
    found = index.module_reexports(source)
    if found or source in index.star_cache:
        return found or index.star_cache[source]
    out: dict[str, str] = {}
    path = index.modules.get(source)
    ctx = parse_file(Path(path)) if path else None
    if ctx is not None:
        imports = absolute_imports(ctx, source)
        for name in module_level_imports(ctx.tree):
            target = imports.get(name)
            if target is not None and index.resolve_module(target.partition(".")[0]) is None:
                out[name] = target
    index.star_cache[source] = out
    return out


def attach(ctx: FileContext, index: IndexCore | None, path: Path) -> None:
    """Give a file's context its project (module name and absolute imports)."""
    if index is None:
        return
    try:
        module = module_name(index.root, path.resolve())
    except ValueError:
        return
    ctx.project = index
    ctx.module = module
    # ``from utils import *`` where utils.py does ``import torch``: Python hands over ``torch`` too
    # (no ``__all__`` read here), so ``torch.nn.parallel.DistributedDataParallel(...)`` resolves
    for node in ctx.tree.body:
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            source = index.resolve_module(absolute_module(node, relative_base(ctx, module)) or "")
            for name, target in star_names(index, source).items() if source else ():
                ctx.imports.setdefault(name, target)
    ctx.absolute_imports = sibling_imports(
        ctx, absolute_imports(ctx, module), module, index.resolve_module, index.module_heads()
    )
