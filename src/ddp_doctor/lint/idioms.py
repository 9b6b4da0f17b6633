"""How the frameworks people train with spell the facts the rules look for, kept as data.

Each entry names the framework, the spelling (a regular expression on a dotted name, or an
exact qualified name), and a small program that shows the idiom; tests/lint/test_idioms.py lints
every example and checks the finding it must (or must not) produce, so an entry without a
working example cannot be added. Sources: each framework's documentation of the named API
(Lightning Fabric ``Fabric.print``/``log_dict`` run on global rank 0 only; accelerate
``Accelerator.print``/``log`` on the main process only; torchmetrics ``sync_on_compute``;
Ultralytics/YOLO ``RANK in {-1, 0}``; timm ``NativeScaler``; DeepSpeed engine ``backward``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Idiom:
    framework: str
    kind: str  # which table it belongs to (the constants below)
    spelling: str  # human-readable spelling, e.g. "fabric.print(...)"
    example: str  # a complete small program showing it
    expect: tuple[str, ...]  # lint IDs the example must produce (exactly)


# --- calls that log on rank 0 only (no explicit guard needed) ---------------------------------
# Receiver (last part) -> methods that run on rank 0 only.
RANK0_METHODS: dict[str, frozenset[str]] = {
    "fabric": frozenset({"print", "log", "log_dict"}),  # Lightning Fabric: global rank 0
    "accelerator": frozenset({"print", "log"}),  # accelerate: @on_main_process
    "xm": frozenset({"master_print"}),  # torch_xla
}
# Experiment trackers whose module-level functions record the value they are handed (fastNLP's
# ``fitlog.add_loss(value, name=..., step=...)``, ``fitlog.add_metric(...)``): module -> functions.
# Log calls like ``print`` (where they run decides whose value is recorded), not rank-0 calls.
TRACKER_LOG_FUNCTIONS: dict[str, frozenset[str]] = {
    "fitlog": frozenset({"add_loss", "add_metric", "add_best_metric"}),
}
# What an object is, not what it is called: a name bound to accelerate's ``Accelerator(...)`` prints
# and logs on the main process only (``Accelerator.print`` is ``if self.is_local_main_process:
# print(...)``); a logger from ``accelerate.logging.get_logger`` logs on the main process only unless
# the call passes ``main_process_only=False``.
ACCELERATOR_CLASS = "accelerate.Accelerator"
MAIN_PROCESS_LOGGER_FACTORY = "accelerate.logging.get_logger"
MAIN_PROCESS_LOGGER_RECORDS = frozenset(
    {"debug", "info", "warning", "warn", "error", "critical", "exception", "log"}
)
# Free functions that print/log on one rank only (Megatron, llm.c, Lightning utilities ...).
RANK0_FUNCTION = re.compile(
    r"^(print|log|logger)_?(rank_?(0|zero|last)|master|main(_process)?)$|^(master|main)_?(print|log)$|"
    r"^print0$|^rank_?zero_(info|warn|debug|print|log)$|^print_on_rank_?0$",
    re.IGNORECASE,
)

# Decorators that run a function on rank 0 only (Lightning ``@rank_zero_only``, fastNLP
# ``@rank_zero_call``, ``@master_only`` of mmcv-style code): what it logs is rank 0's.
RANK0_DECORATOR = re.compile(
    r"^(rank_?zero_only|rank_?zero_call|rank_?0_only|only_rank_?0|master_only|main_process_only|"
    r"on_main_process|on_rank_?zero|run_on_rank_?zero)$",
    re.IGNORECASE,
)

# Classes of installed packages that say they log on rank 0 only (physicsnemo's
# ``RankZeroLoggingWrapper(logger, dist)``): read by name, as their code is not the project's (a
# project class is read by its code: lint/rank0_sinks.py).
RANK0_SINK_CLASS = re.compile(
    r"^(RankZero|Rank0|MasterOnly|MainProcess|MainRank)\w*(Logger|Logging|Writer|Wrapper|Printer)\w*$"
)

# --- tests that are true on rank 0 only --------------------------------------------------------
# Receiver (last part) -> attributes that are non-empty on the main process only: accelerate's
# ``init_trackers`` is ``@on_main_process``, so ``len(accelerator.trackers) > 0`` is a main-process test
# (kohya sd-scripts ``is_tracking``).
RANK0_STATE: dict[str, frozenset[str]] = {"accelerator": frozenset({"trackers"})}
# A bare flag or call (``if master_process:``, ``if utils.is_main_process():``).
MAIN_FLAG = re.compile(
    r"^(is_)?(master|main)(_process|_rank|_worker|_node)?$|^is_rank_?(zero|0)$|^is_global_zero$|"
    r"^rank_?(zero|0)$|^is_local_main_process$|^is_primary$|^is_master_ordinal$|^is_world_process_zero$",
    re.IGNORECASE,
)
# What a single-process answer of an "am I rank 0?" function tests: the process group or the devices.
PROCESS_TEST = re.compile(
    r"distributed|ddp|world_size|is_initialized|is_available|device_count|gpus?\b|rank", re.IGNORECASE
)
# The index ``mp.spawn`` passes a worker is its rank: DGL's ``proc_id``, ``process_id``.
RANK_NAME = re.compile(r"rank|process_index|(^|[._\s])proc(ess)?_(id|idx|index)\b", re.IGNORECASE)
# The GPU a spawned process drives (``mp.spawn(main_worker)`` passes it as ``gpu``): its local rank.
# Not ``n_gpu``/``num_gpus`` (a count: ``n_gpu == 0`` means CPU).
# The DDP class as imports resolve it (``ctx.call_qualname``), whatever name a file gives it.
DDP = "torch.nn.parallel.DistributedDataParallel"
GPU_NAME = re.compile(r"^(local_)?gpu(_id|_idx|_index)?$", re.IGNORECASE)
# A rank's number read as a truth value (``if not rank:``, ``if args.local_rank: return``): zero on
# rank 0 only. Not a flag about rank 0 (``is_rank_zero``, ``rank0``) nor a count (``world_size``).
RANK_NUMBER = re.compile(
    r"^_*((local|global|world|node|proc|process|dist|ddp|my|cur|current)_?)?rank(_?(id|idx|index))?$"
    r"|^get_(local_|global_)?rank$",
    re.IGNORECASE,
)
# Receivers of ``.info(...)``-style calls that go through the logging configuration.
LOGGER_NAME = re.compile(r"^_*(logger|log|logging|LOGGER|LOG)$")
# Levels that silence ordinary ``info`` records when set on the ranks other than 0.
QUIET_LEVELS = frozenset({"WARN", "WARNING", "ERROR", "CRITICAL", "FATAL"})
# ``RANK in {-1, 0}``: a membership test whose constants are only 0 and -1 (-1 = not distributed).
RANK0_MEMBERS = frozenset({0, -1})

# --- objects whose method calls do backward with the loss (scaling it themselves) -------------
# timm/ConvNeXt/MAE/Swin ``loss_scaler(loss, optimizer, ...)``: a GradScaler wrapper whose
# __call__ runs scaler.scale(loss).backward().
SCALER_CALLABLE = re.compile(r"(^|_)(loss_?)?scaler$", re.IGNORECASE)
SCALER_CLASS = re.compile(r"(Native|Apex)Scaler\w*$")
# Optimizers that keep float32 master weights and scale the loss dynamically themselves: fairseq
# ``FP16Optimizer``/``MemoryEfficientFP16Optimizer`` (``optimizer.backward(loss)`` multiplies by the
# loss scale), apex/Megatron/DeepSpeed ``FP16_Optimizer``. A float16 model under one is scaled.
LOSS_SCALING_OPTIMIZER = re.compile(r"FP16_?Optimizer")

# --- context managers that control DDP gradient sync -------------------------------------------
# apex ``DistributedDataParallel.disable_allreduce()`` makes the following backwards skip the
# all-reduce until ``enable_allreduce()`` (apex/parallel/distributed.py): apex's no_sync.
SYNC_CONTROL = re.compile(
    r"^(no_sync|no_backward_sync|ddp_sync|maybe_no_sync|sync_context|skip_sync|no_grad_sync|"
    r"require_backward_grad_sync|set_requires_gradient_sync|set_is_last_backward|trigger_sync_in_backward|"
    r"disable_allreduce)$"
)

# --- model constructors by name that contain BatchNorm -----------------------------------------
# ``models.__dict__[arch]()``, ``getattr(models, arch)()``, ``torchvision.models.get_model(name)``.
MODEL_REGISTRIES = frozenset({"torchvision.models", "models"})
MODEL_GETTERS = frozenset({"torchvision.models.get_model"})
# Factories that build a model from a name (timm): BatchNorm when the name — a literal or the
# default of the flag it comes from — is of a BatchNorm family (ViT/Swin/ConvNeXt use LayerNorm).
MODEL_FACTORIES = frozenset({"timm.create_model"})
BATCHNORM_ARCH = re.compile(
    r"^(resnet|resnext|wide_resnet|seresnet|seresnext|res2net|resnest|senet|legacy_se|efficientnet|"
    r"tf_efficientnet|mobilenet|mnasnet|regnet|densenet|vgg\d+_bn|inception|dla|dpn|hrnet|csp|darknet|"
    r"rexnet|ghostnet|mixnet|gernet|repvgg|selecsls|tresnet|dm_nfnet_no)\w*",
    re.IGNORECASE,
)

# --- metric objects: local unless they sync --------------------------------------------------
SYNC_ON_COMPUTE = "sync_on_compute"

IDIOMS: tuple[Idiom, ...] = (
    Idiom(
        "Lightning Fabric",
        "rank0-log",
        "fabric.print(loss)",
        """
import torch.nn.functional as F
def train(fabric, model, loader, optimizer):
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        fabric.backward(loss)
        optimizer.step()
        fabric.print(f"loss {loss.item():.4f}")
""",
        ("rank0-only-loss-log",),
    ),
    Idiom(
        "Lightning Fabric",
        "rank0-log",
        "fabric.log_dict({...})",
        """
import torch.nn.functional as F
def train(fabric, model, loader, optimizer):
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        fabric.backward(loss)
        optimizer.step()
        metrics = {"loss": loss.item()}
        fabric.log_dict(metrics)
""",
        ("rank0-only-loss-log",),
    ),
    Idiom(
        "accelerate",
        "rank0-log",
        "accelerator.print(loss)",
        """
def train(accelerator, model, loader, optimizer):
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        accelerator.print("loss", loss.item())
""",
        ("rank0-only-loss-log",),
    ),
    Idiom(
        "accelerate",
        "rank0-log",
        "acc = Accelerator(); acc.print(loss)",
        """
from accelerate import Accelerator
def train(model, loader, optimizer):
    acc = Accelerator()
    model, optimizer, loader = acc.prepare(model, optimizer, loader)
    for batch in loader:
        loss = model(**batch).loss
        acc.backward(loss)
        optimizer.step()
        acc.print("loss", loss.item())
""",
        ("rank0-only-loss-log",),
    ),
    Idiom(
        "accelerate",
        "rank0-log",
        "logger = accelerate.logging.get_logger(__name__); logger.info(loss)",
        """
from accelerate import Accelerator
from accelerate.logging import get_logger
logger = get_logger(__name__)
def train(model, loader, optimizer):
    accelerator = Accelerator()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        logger.info(f"loss {loss.item()}")
""",
        ("rank0-only-loss-log",),
    ),
    Idiom(
        "accelerate",
        "rank0-guard",
        "is_tracking = len(accelerator.trackers) > 0",
        """
def train(accelerator, model, loader, optimizer, writer):
    accelerator.init_trackers("run")
    is_tracking = len(accelerator.trackers) > 0
    for step, batch in enumerate(loader):
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        if is_tracking:
            writer.add_scalar("loss", loss.item(), step)
""",
        ("rank0-only-loss-log",),
    ),
    Idiom(
        "Megatron / llm.c",
        "rank0-log",
        "print0(...) / print_rank_0(...)",
        """
def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        print0(f"loss {loss.item()}")
""",
        ("rank0-only-loss-log",),
    ),
    Idiom(
        "Ultralytics YOLO",
        "rank0-guard",
        "if RANK in {-1, 0}:",
        """
def train(model, loader, optimizer, compute_loss, pbar, RANK):
    for imgs, targets in loader:
        loss, loss_items = compute_loss(model(imgs), targets)
        loss.backward()
        optimizer.step()
        if RANK in {-1, 0}:
            pbar.set_description(str(loss_items))
""",
        ("rank0-only-loss-log",),
    ),
    Idiom(
        "llama-recipes",
        "rank0-guard",
        "if not enable_fsdp or rank == 0:",
        """
def train(model, loader, optimizer, cfg, rank, wandb_run):
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        if not cfg.enable_fsdp or rank == 0:
            wandb_run.log({"train/loss": loss.detach().float()})
""",
        ("rank0-only-loss-log",),
    ),
    Idiom(
        "torchmetrics / litgpt",
        "local-metric",
        "RunningMean(sync_on_compute=False)",
        """
from torchmetrics.aggregation import RunningMean
def train(fabric, model, loader, optimizer):
    running_loss = RunningMean(window=4, sync_on_compute=False)
    for x, y in loader:
        loss = model(x, y)
        fabric.backward(loss)
        optimizer.step()
        running_loss.update(loss.detach())
        fabric.log_dict({"loss": running_loss.compute().item()})
""",
        ("rank0-only-loss-log",),
    ),
    Idiom(
        "torchmetrics",
        "synced-metric",
        "MeanMetric() (sync_on_compute defaults to True)",
        """
from torchmetrics import MeanMetric
def train(fabric, model, loader, optimizer):
    mean_loss = MeanMetric()
    for x, y in loader:
        loss = model(x, y)
        fabric.backward(loss)
        optimizer.step()
        mean_loss.update(loss.detach())
        fabric.log_dict({"loss": mean_loss.compute().item()})
""",
        (),
    ),
    Idiom(
        "timm / MAE / ConvNeXt / Swin",
        "scaler-callable",
        "loss_scaler(loss, optimizer, ...)",
        """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
def train(model, loader, optimizer, loss_scaler, accum_iter):
    model = DDP(model)
    for i, (x, y) in enumerate(loader):
        with torch.cuda.amp.autocast():
            loss = model(x, y)
        loss /= accum_iter
        loss_scaler(loss, optimizer, update_grad=(i + 1) % accum_iter == 0)
        if (i + 1) % accum_iter == 0:
            optimizer.zero_grad()
""",
        ("accum-no-sync-missing",),
    ),
    Idiom(
        "NVlabs EDM / StyleGAN",
        "sync-control",
        "with misc.ddp_sync(ddp, last_round):",
        """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
def train(net, loader, optimizer, rounds, misc):
    ddp = DDP(net)
    for x in loader:
        optimizer.zero_grad()
        for r in range(rounds):
            with misc.ddp_sync(ddp, r == rounds - 1):
                loss = ddp(x)
                loss.sum().div(rounds).backward()
        optimizer.step()
""",
        (),
    ),
    Idiom(
        "fitlog (fastNLP)",
        "tracker-log",
        "fitlog.add_loss(value, name=..., step=...)",
        """
import torch.distributed as dist
import fitlog
def train(model, loader, optimizer):
    running = 0.0
    for i, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        running += loss.item()
        if dist.get_rank() == 0 and i % 10 == 9:
            fitlog.add_loss(running / 10, name="train_loss", step=i)
""",
        ("rank0-only-loss-log",),
    ),
    Idiom(
        "DeepSpeed",
        "framework-backward",
        "model_engine.backward(loss); model_engine.step()",
        """
def train(model_engine, loader, local_rank):
    running = 0.0
    for i, (x, y) in enumerate(loader):
        loss = model_engine(x, y)
        model_engine.backward(loss)
        model_engine.step()
        running += loss.item()
        if local_rank == 0 and i % 10 == 9:
            print(running / 10)
""",
        ("rank0-only-loss-log",),
    ),
    Idiom(
        "pytorch/examples imagenet",
        "model-by-name",
        "models.__dict__[args.arch]()",
        """
import torch
import torchvision.models as models
def main(args):
    model = models.__dict__[args.arch]()
    model = torch.nn.parallel.DistributedDataParallel(model)
""",
        ("batchnorm-unsynced",),
    ),
)
