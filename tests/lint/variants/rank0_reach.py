"""rank0-only-loss-log variants where the loss, the rank-0 test or the rank-0-only output reaches
the log from further away: a running mean named ``loss_p``, a dict of loss terms summed through
``list(...)``, a ``ProgressMeter`` class in a file of its own, a training helper of a worker that
replaces ``print`` off rank 0, the rank handed to a class under a name of its own (round 26)."""

from tests.lint.variants.rank0_structure import R, one

C = {}

# GraphCast_pytorch: ``loss_p = accum_loss / (i - accum_step)`` printed on rank 0. A ``_p`` suffix
# is a probability unless the name says loss.
RUNNING_MEAN = """
    accum_loss = 0
    accum_step = 0
    for epoch in range(args.epochs):
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            accum_loss += loss.item()
            if i > 0 and i % 5 == 0 and rank == 0:
                loss_p = accum_loss / (i - accum_step)
                accum_step = i
                accum_loss = 0
                print(f"epoch {epoch} batch {i} loss {loss_p}")
"""
C["loss_named_p_running_mean"] = (R, True, one(RUNNING_MEAN), "train.py")
C["NEG_loss_named_p_running_mean_all_reduced"] = (
    R,
    False,
    one(
        """
    accum_loss = 0
    accum_step = 0
    for epoch in range(args.epochs):
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            accum_loss += loss.item()
            if i > 0 and i % 5 == 0:
                t = torch.tensor([accum_loss / (i - accum_step)], device="cuda")
                dist.all_reduce(t)
                loss_p = t.item() / dist.get_world_size()
                accum_step = i
                accum_loss = 0
                if rank == 0:
                    print(f"epoch {epoch} batch {i} loss {loss_p}")
"""
    ),
    "train.py",
)

# lab4d: the model returns a dict of loss terms; backward runs on
# ``torch.sum(torch.stack(list(loss_dict.values())))`` and rank 0 writes every term.
TERMS = """
    writer = SummaryWriter()
    for epoch in range(args.epochs):
        for step, batch in enumerate(loader):
            loss_dict = model(batch)
            total_loss = torch.sum(torch.stack(list(loss_dict.values())))
            total_loss.backward()
            optimizer.step()
            optimizer.zero_grad()
{REDUCE}            if rank == 0:
                for k, v in loss_dict.items():
                    writer.add_scalar(k, v, step)
"""
C["loss_terms_stacked_from_a_list"] = (R, True, one(TERMS.replace("{REDUCE}", "")), "train.py")
C["NEG_loss_terms_stacked_from_a_list_all_reduced"] = (
    R,
    False,
    one(
        TERMS.replace(
            "{REDUCE}",
            "            for v in loss_dict.values():\n"
            "                dist.all_reduce(v)\n"
            "                v /= dist.get_world_size()\n",
        )
    ),
    "train.py",
)

# cl_vad: ImageNet's AverageMeter/ProgressMeter in a file that imports only numpy (none of the
# project index's pre-check words), ``progress.display(i)`` in the loop, and a setup of another
# file that replaces ``builtins.print`` off rank 0.
METER = """
import numpy as np


class AverageMeter(object):
    def __init__(self, name, fmt=":f"):
        self.name = name
        self.fmt = fmt
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        fmtstr = "{name} {val" + self.fmt + "} ({avg" + self.fmt + "})"
        return fmtstr.format(**self.__dict__)


class ProgressMeter(object):
    def __init__(self, num_batches, meters, prefix=""):
        self.batch_fmtstr = "[{}/" + str(num_batches) + "]"
        self.meters = meters
        self.prefix = prefix

    def display(self, batch):
        entries = [self.prefix + self.batch_fmtstr.format(batch)]
        entries += [str(meter) for meter in self.meters]
        print("\\t".join(entries))
"""
DIST_SETUP = """
import builtins
import torch
import torch.distributed as dist


def init_distributed_env(args):
    torch.cuda.set_device(args.local_rank)
    dist.init_process_group(backend="nccl", init_method="env://")
{SILENCE}
"""
SILENCE = """    if args.local_rank != 0:

        def print_pass(*args):
            pass

        builtins.print = print_pass
"""
METER_TRAIN = """
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from utils.meter import AverageMeter, ProgressMeter
import utils.distribute as distributed


def train_one_epoch(loader, model, optimizer, epoch):
    losses = AverageMeter("Loss", ":.4f")
    progress = ProgressMeter(len(loader), [losses], prefix="Epoch:[{}]".format(epoch))
    model.train()
    for idx, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss.item(), x.size(0))
        progress.display(idx)
    return losses.avg


def main(args, net, loader):
    distributed.init_distributed_env(args)
    model = DDP(net.cuda(), device_ids=[args.local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        train_one_epoch(loader, model, optimizer, epoch)
"""


def _meter_project(silence: str) -> dict[str, str]:
    return {
        "utils/__init__.py": "",
        "utils/meter.py": METER,
        "utils/distribute.py": DIST_SETUP.replace("{SILENCE}", silence),
        "train.py": METER_TRAIN,
    }


C["progress_meter_in_a_numpy_only_file_print_silenced"] = (
    R,
    True,
    _meter_project(SILENCE),
    "train.py",
)
C["NEG_progress_meter_in_a_numpy_only_file_every_rank_prints"] = (
    R,
    False,
    _meter_project("    pass\n"),
    "train.py",
)

# Contrastive-Segmentation: the worker replaces ``builtins.print`` off rank 0 and calls ``train``
# of a helper file that names no process group, rank or world size itself; that file's prints of
# its meters show rank 0's values.
HELPER_TRAIN = """
import torch
from utils.meters import AverageMeter


def train(loader, model, optimizer, epoch):
    losses = AverageMeter()
    model.train()
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss.item())
        if i % 25 == 0:
            print("epoch {} iter {} loss {:.4f}".format(epoch, i, losses.avg))
"""
SIMPLE_METER = """
class AverageMeter(object):
    def __init__(self):
        self.sum = 0
        self.count = 0
        self.avg = 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count
"""
WORKER = """
import builtins
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from utils.train_utils import train


def main_worker(gpu, ngpus, args, net, loader):
    args.gpu = gpu
    if args.gpu != 0:

        def print_pass(*args):
            pass

        builtins.print = print_pass
    dist.init_process_group(backend="nccl", init_method=args.dist_url, world_size=ngpus, rank=gpu)
    model = DDP(net.cuda(gpu), device_ids=[gpu])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        train(loader, model, optimizer, epoch)


def main(args, net, loader):
    ngpus = torch.cuda.device_count()
    mp.spawn(main_worker, nprocs=ngpus, args=(ngpus, args, net, loader))
"""
C["helper_of_a_worker_that_silences_print"] = (
    R,
    True,
    {
        "utils/__init__.py": "",
        "utils/meters.py": SIMPLE_METER,
        "utils/train_utils.py": HELPER_TRAIN,
        "main.py": WORKER,
    },
    "utils/train_utils.py",
)
# TabPFN's shape: a single-process script imports the module that would replace ``print`` in a
# distributed run, but never calls that code; its own prints are every process's
SEARCH = """
import torch
from utils.dist_setup import init_dist
from utils.meters import AverageMeter


def search(loader, model, optimizer):
    losses = AverageMeter()
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss.item())
        print("iter {} loss {:.4f}".format(i, losses.avg))
"""
DIST_ONLY = """
import builtins
import torch.distributed as dist


def init_dist(rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    if rank != 0:

        def print_pass(*args):
            pass

        builtins.print = print_pass
"""
C["NEG_single_process_script_importing_the_print_silencer"] = (
    R,
    False,
    {
        "utils/__init__.py": "",
        "utils/meters.py": SIMPLE_METER,
        "utils/dist_setup.py": DIST_ONLY,
        "search.py": SEARCH,
    },
    "search.py",
)

# Multi_Lanes_Detection: the runner keeps the rank it is handed under a name of its own
# (``main_pod=args.rank`` → ``self.main_pod``) and logs the unreduced loss terms under
# ``if self.main_pod == 0:``.
RUNNER = """
import torch


class Runner:
    def __init__(self, model, optimizer, main_pod=0):
        self.model = model
        self.optimizer = optimizer
        self.main_pod = main_pod

    def train(self, loader):
        for images, labels in loader:
            outputs = self.model(images)
            loss, loss_terms = self.model.module.loss(outputs, labels)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if self.main_pod == 0:
                postfix = {key: float(value) for key, value in loss_terms.items()}
                print(postfix)
"""
RUNNER_MAIN = """
import argparse
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from lib.runner import Runner


def main(net, loader):
    parser = argparse.ArgumentParser()
    args = parser.parse_args()
    args.rank = int(os.environ["RANK"])
    dist.init_process_group("nccl", rank=args.rank)
    model = DDP(net.cuda())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    runner = Runner(model, optimizer, main_pod={POD})
    runner.train(loader)
"""
C["rank_kept_by_a_class_under_another_name"] = (
    R,
    True,
    {
        "lib/__init__.py": "",
        "lib/runner.py": RUNNER,
        "main.py": RUNNER_MAIN.replace("{POD}", "args.rank"),
    },
    "lib/runner.py",
)
C["NEG_class_flag_named_like_no_rank_handed_a_constant"] = (
    R,
    False,
    {
        "lib/__init__.py": "",
        "lib/runner.py": RUNNER,
        "main.py": RUNNER_MAIN.replace("{POD}", "0"),
    },
    "lib/runner.py",
)

# TopDiG's main_ddp.py: a module-level printer that calls the saved ``print`` only under a rank-0
# predicate (``if is_rank_0(): original_print(*args)``), installed by the worker (``builtins.print =
# print_if_rank0``); the helper file's prints of its meters show rank 0's values. The near-miss's
# printer gates on a verbosity flag, not the rank: every rank prints.
MODULE_PRINTER = """
import builtins
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from utils.train_utils import train

original_print = builtins.print


def is_rank_0():
    return dist.get_rank() == 0


def print_if_rank0(*args, **kwargs):
    if GATE:
        original_print(*args, **kwargs)


def main_worker(gpu, ngpus, args, net, loader):
    dist.init_process_group(backend="nccl", init_method=args.dist_url, world_size=ngpus, rank=gpu)
    builtins.print = print_if_rank0
    model = DDP(net.cuda(gpu), device_ids=[gpu])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        train(loader, model, optimizer, epoch)


def main(args, net, loader):
    ngpus = torch.cuda.device_count()
    mp.spawn(main_worker, nprocs=ngpus, args=(ngpus, args, net, loader))
"""
C["helper_of_a_worker_installing_a_module_level_rank0_printer"] = (
    R,
    True,
    {
        "utils/__init__.py": "",
        "utils/meters.py": SIMPLE_METER,
        "utils/train_utils.py": HELPER_TRAIN,
        "main.py": MODULE_PRINTER.replace("GATE", "is_rank_0()"),
    },
    "utils/train_utils.py",
)
C["NEG_helper_of_a_worker_installing_a_module_level_verbose_printer"] = (
    R,
    False,
    {
        "utils/__init__.py": "",
        "utils/meters.py": SIMPLE_METER,
        "utils/train_utils.py": HELPER_TRAIN,
        "main.py": MODULE_PRINTER.replace("GATE", "kwargs.pop('verbose', True)"),
    },
    "utils/train_utils.py",
)
