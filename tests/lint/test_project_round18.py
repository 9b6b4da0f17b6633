"""Project mode, round 18 of issue #27.

- Objects that log what they were built with. The ImageNet example's ``ProgressMeter`` lives in a ``utils.py``; the trainer builds it from the
epoch's meters and calls ``progress.display(i)``, which prints (or ``logging.info``-s) every meter.
The call logs the loss meter when ``print`` is replaced off rank 0 in the entry file, when the
call is under a rank-0 test, or when the logging setup keeps rank 0's records only. A meter fed
the all-reduced loss, or a display on every rank, is no rank-0-only log.
- A flag every caller binds to a rank-0 test (``verbose = (worker_idx == 0)`` in the spawned worker,
  whose first parameter is the process index) is a rank-0 test in the function of another file it
  is handed to; a project method that all-reduces its receiver's meters (``loss.all_reduct(dev)``)
  makes what is printed after it the global value.
- ``from utils import *`` hands on what ``utils.py`` imports (``torch``): a worker that spells
  ``torch.nn.parallel.DistributedDataParallel`` through it wraps in DDP; a loader handed to a train
  function of another file that iterates it through ``tqdm(enumerate(loader))`` is trained on.
- A rank-0 block behind ``if writer is not None:`` where ``writer`` is a parameter defaulting to None
  that no call of the project passes never runs (UFDN-ReID's ``do_train(..., writer=None)``).
- A pipeline stage's own ``model.backward(input, output, grad)`` (picotron) backprops the tensors it is
  handed, not ``model``: the step counters printed beside the loss are no loss.
- A file named alone (``ddp-doctor lint train_dist.py``) is read in the project around it (its directory,
  or the one above its top package) and only it is reported; ``--no-project`` lints it by itself.
- ``from models import Backbone`` in ``ddp/learner.py`` names the sibling ``ddp/models.py`` (Python
  runs the script from its own directory), even beside another ``single_GPU/models.py``.
"""

from __future__ import annotations

from pathlib import Path

from ddp_doctor.lint.engine import alone_project_root, lint_paths
from tests.lint.project_facts import found
from tests.lint.project_facts import write_files as _write

UTILS = """
import logging


class AverageMeter:
    def __init__(self, name):
        self.name = name
        self.val = 0.0

    def update(self, val, n=1):
        self.val = val

    def __str__(self):
        return f"{self.name} {self.val:.4f}"


class ProgressMeter:
    def __init__(self, num_batches, meters, prefix=""):
        self.num_batches = num_batches
        self.meters = meters
        self.prefix = prefix

    def display(self, batch):
        entries = [self.prefix + f"[{batch}/{self.num_batches}]"]
        entries += [str(meter) for meter in self.meters]
        OUT("\\t".join(entries))


def configure_logger(rank):
    level = logging.INFO if rank in {-1, 0} else logging.WARNING
    logging.basicConfig(level=level)
"""

TRAIN = """
import builtins
import logging

import torch
import torch.distributed as dist

from utils import AverageMeter, ProgressMeter, configure_logger


def train(loader, model, criterion, optimizer, epoch, rank, world_size):
    losses = AverageMeter("Loss")
    progress = ProgressMeter(len(loader), [losses], prefix=f"Epoch: [{epoch}]")
    for i, (images, target) in enumerate(loader):
        loss = criterion(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        value = loss.detach().clone()
        REDUCE
        losses.update(value.item() / SCALE, images.size(0))
        if i % 10 == 0:
            progress.display(i)


def main_worker(gpu, args, loader, model, criterion, optimizer):
    SETUP
    dist.init_process_group("nccl", rank=gpu, world_size=args.world_size)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[gpu])
    for epoch in range(args.epochs):
        train(loader, model, criterion, optimizer, epoch, gpu, args.world_size)
"""

SILENCE_PRINT = """if gpu != 0:

        def print_pass(*args):
            pass

        builtins.print = print_pass"""


def _project(tmp_path: Path, out: str, setup: str, reduced: bool = False) -> Path:
    train = TRAIN.replace("SETUP", setup)
    train = train.replace("REDUCE", "dist.all_reduce(value)" if reduced else "pass")
    train = train.replace("SCALE", "world_size" if reduced else "1")
    return _write(tmp_path, {"utils.py": UTILS.replace("OUT", out), "train.py": train})


def test_progress_meter_of_another_file_printed_while_print_is_silenced(tmp_path: Path) -> None:
    assert found(_project(tmp_path, "print", SILENCE_PRINT)) == {("rank0-only-loss-log", "train.py")}


def test_progress_meter_logging_while_the_logging_setup_keeps_rank0_records(tmp_path: Path) -> None:
    root = _project(tmp_path, "logging.info", "configure_logger(gpu)")
    assert found(root) == {("rank0-only-loss-log", "train.py")}


def test_progress_meter_printed_on_every_rank_is_not_a_rank0_log(tmp_path: Path) -> None:
    assert found(_project(tmp_path, "print", "pass")) == set()


def test_progress_meter_logging_on_every_rank_is_not_a_rank0_log(tmp_path: Path) -> None:
    root = _project(tmp_path, "logging.info", "logging.basicConfig(level=logging.INFO)")
    (root / "utils.py").write_text(UTILS.replace("OUT", "logging.info").split("def configure_logger")[0])
    assert found(root) == set()


def test_progress_meter_of_reduced_loss_values_is_not_a_rank0_log(tmp_path: Path) -> None:
    root = _project(tmp_path, "print", SILENCE_PRINT, reduced=True)
    assert found(root) == set()


# --- a rank-0 flag handed to a function of another file; a method that reduces its receiver -----

METRICS = """
import torch
import torch.distributed as dist
from tqdm import tqdm


class MetricCollector:
    def __init__(self, name):
        self.name = name
        self.total = torch.zeros(2)

    def update(self, v):
        self.total += torch.tensor([v, 1.0])

    def all_reduce(self, device):
        t = self.total.to(device)
        dist.all_reduce(t)
        self.total = t

    def summary(self):
        return f"{self.name} {self.total[0] / self.total[1]:.3f}"


class MetricManager:
    def __init__(self, metrics):
        self.metrics = metrics

    def all_reduct(self, device):
        for idx in range(len(self.metrics)):
            self.metrics[idx].all_reduce(device)

    def summary_all(self):
        return "  ".join(x.summary() for x in self.metrics)


def ddp_train(loader, model, optimizer, verbose=False):
    loss_cur = MetricCollector("loss")
    manager = MetricManager([loss_cur])
    iterx = tqdm(loader) if verbose else loader
    for data in iterx:
        loss = model(data)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss_cur.update(loss.item())
        if verbose:
            iterx.set_postfix_str(manager.summary_all())
    return manager
"""

MAIN = """
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

from training import ddp_train


def main_worker(worker_idx, world_size, loader, model, optimizer):
    dist.init_process_group("nccl", world_size=world_size, rank=worker_idx)
    model = DDP(model, device_ids=[worker_idx])
    verbose = VERBOSE
    for ep in range(10):
        loss = ddp_train(loader, model, optimizer, verbose=verbose)
        loss.all_reduct("cuda")
        if verbose:
            print("[TRAIN]", loss.summary_all())


def main(world_size, loader, model, optimizer):
    mp.spawn(main_worker, nprocs=world_size, args=(world_size, loader, model, optimizer))
"""


def _spawned(tmp_path: Path, verbose: str) -> Path:
    return _write(tmp_path, {"training.py": METRICS, "main.py": MAIN.replace("VERBOSE", verbose)})


def test_a_flag_every_caller_binds_to_the_spawned_index_is_rank0_in_the_callee(tmp_path: Path) -> None:
    # the bar of the epoch function shows this rank's meter; the epoch summary printed after
    # ``loss.all_reduct(...)`` (a project method that all-reduces its meters) is the global value
    root = _spawned(tmp_path, "worker_idx == 0")
    assert found(root) == {("rank0-only-loss-log", "training.py")}


def test_a_flag_true_on_every_rank_is_no_rank0_test_in_the_callee(tmp_path: Path) -> None:
    assert found(_spawned(tmp_path, "True")) == set()


SIBLING_MODELS = """
import torch.nn as nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 64, 3), NORM)
"""

LEARNER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from models import Backbone


def train(loader, device):
    model = DDP(Backbone().to(device), device_ids=[device])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        loss = model(x).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def _two_copies(tmp_path: Path, ddp_norm: str, single_norm: str) -> Path:
    return _write(
        tmp_path,
        {
            "ddp/models.py": SIBLING_MODELS.replace("NORM", ddp_norm),
            "ddp/learner.py": LEARNER,
            "single_GPU/models.py": SIBLING_MODELS.replace("NORM", single_norm),
        },
    )


def test_an_absolute_import_names_the_module_beside_the_script(tmp_path: Path) -> None:
    root = _two_copies(tmp_path, "nn.BatchNorm2d(64)", "nn.Identity()")
    assert found(root) == {("batchnorm-unsynced", "ddp/learner.py")}


def test_the_sibling_without_batchnorm_is_not_the_other_copy(tmp_path: Path) -> None:
    assert found(_two_copies(tmp_path, "nn.Identity()", "nn.BatchNorm2d(64)")) == set()


STAR_UTILS = """
import json

import torch


def save_json(path, data):
    with open(path, "w") as f:
        json.dump(data, f)
"""

TRAIN_FUNC = """
from tqdm import tqdm


def train(args, model, train_dataloader, optimizer):
    for epoch in range(args.epochs):
        train_t = tqdm(enumerate(train_dataloader), total=len(train_dataloader))
        for i, batch in train_t:
            loss = model(batch).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""

STAR_MAIN = """
from torch.utils.data import DataLoader

from train_func import train
from utils import *


def main_worker(rank, args, dataset, model):
    train_dataloader = DataLoader(dataset, batch_size=8, shuffle=True)
    model = torch.nn.parallel.DistributedDataParallel(model.to(rank), device_ids=[rank])
    optimizer = torch.optim.Adam(model.parameters())
    train(args, model, train_dataloader, optimizer)
"""


def test_torch_handed_on_by_a_star_import_and_a_loader_drawn_through_a_bar(tmp_path: Path) -> None:
    root = _write(tmp_path, {"utils.py": STAR_UTILS, "train_func.py": TRAIN_FUNC, "train_dist.py": STAR_MAIN})
    assert found(root) == {("sampler-missing", "train_dist.py")}


DO_TRAIN = """
import torch.distributed as dist


def do_train(model, loader, optimizer, logger, writer=None):
    for i, x in enumerate(loader):
        loss = model(x).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if dist.get_rank() == 0 and writer is not None:
            writer.add_scalar("loss", loss.item(), i)
"""

DIST_TRAIN = """
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.tensorboard import SummaryWriter

from train_loop import do_train


def main(model, loader, optimizer, logger, rank):
    model = DDP(model, device_ids=[rank])
    do_train(model, loader, optimizer, logger WRITER)
"""


def test_a_rank0_block_behind_a_writer_no_call_passes_never_runs(tmp_path: Path) -> None:
    root = _write(tmp_path, {"train_loop.py": DO_TRAIN, "dist_train.py": DIST_TRAIN.replace("WRITER", "")})
    assert found(root) == set()


def test_a_rank0_block_behind_a_writer_a_call_passes_logs(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "train_loop.py": DO_TRAIN,
            "dist_train.py": DIST_TRAIN.replace("WRITER", ", writer=SummaryWriter()"),
        },
    )
    assert found(root) == {("rank0-only-loss-log", "train_loop.py")}


PIPELINE = """
def train_step_pipeline(model, data_loader, steps):
    inputs, outputs, logging_loss = [], [], 0.0
    for _ in range(steps):
        batch = next(data_loader)
        out = model.forward(batch)
        inputs.append(batch)
        outputs.append(out)
        logging_loss += out.mean().item() / steps
    for _ in range(steps):
        model.backward(inputs.pop(0), outputs.pop(0), None)
    return logging_loss
"""

PIPELINE_MAIN = """
import torch
import torch.distributed as dist

from pipeline import train_step_pipeline


def main(model, data_loader, optimizer, rank, world_size, total_steps, checkpoint_manager):
    step, trained_tokens = 0, 0
    if checkpoint_manager is not None:
        step, trained_tokens = checkpoint_manager.load_checkpoint(model, optimizer)
    while step < total_steps:
        optimizer.zero_grad()
        loss = train_step_pipeline(model, data_loader, 4)
        t = torch.tensor(loss)
        dist.all_reduce(t)
        loss = t.item() / world_size
        optimizer.step()
        step += 1
        trained_tokens += 4096
        if rank == 0:
            print(f"step {step} tokens {trained_tokens} loss {loss:.4f}")
"""


def test_a_pipeline_stage_backward_is_no_backward_of_the_model(tmp_path: Path) -> None:
    assert found(_write(tmp_path, {"pipeline.py": PIPELINE, "train.py": PIPELINE_MAIN})) == set()


def test_a_file_named_alone_is_read_in_the_project_around_it(tmp_path: Path) -> None:
    root = _write(tmp_path, {"utils.py": STAR_UTILS, "train_func.py": TRAIN_FUNC, "train_dist.py": STAR_MAIN})
    named = lint_paths([root / "train_dist.py"])
    assert {(f.id, Path(f.path).name) for f in named.findings} == {("sampler-missing", "train_dist.py")}
    assert named.files == 1  # only the named file is reported
    assert lint_paths([root / "train_dist.py"], project=False).findings == []


def test_the_project_around_a_module_of_a_package_starts_above_the_package(tmp_path: Path) -> None:
    root = _write(tmp_path, {"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/sub/mod.py": "x = 1\n"})
    assert alone_project_root(root / "pkg" / "sub" / "mod.py") == root.resolve()
    assert alone_project_root(root / "train_func.py") == root.resolve()
