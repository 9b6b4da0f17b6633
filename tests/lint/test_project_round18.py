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
- ``from models import Backbone`` in ``ddp/learner.py`` names the sibling ``ddp/models.py`` (Python
  runs the script from its own directory), even beside another ``single_GPU/models.py``.
"""

from __future__ import annotations

from pathlib import Path

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
