"""Round 23 of issue #27 (fix23-1): one batchnorm-unsynced finding per bug where one run takes one of
two wraps of the same model (pytorch/examples' ``main_worker``: ``if args.gpu is not None:
DDP(model, device_ids=[args.gpu])`` / ``else: DDP(model)``), reported at the first; wraps of the same
model in sequence stay apart."""

from __future__ import annotations

from pathlib import Path

from ddp_doctor.lint.engine import lint_paths
from tests.lint.project_facts import write_files

HEAD = """
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x):
        return self.bn(x)


def main_worker(gpu, args, loader):
    model = Net()
"""
TRAIN = """
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        loss = model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def _lines(tmp_path: Path, wraps: str) -> list[int]:
    root = write_files(tmp_path / "proj", {"train.py": HEAD + wraps + TRAIN})
    result = lint_paths([root], select=("batchnorm-unsynced",))
    return sorted(f.line for f in result.findings if f.id == "batchnorm-unsynced")


def test_two_branches_one_finding(tmp_path: Path) -> None:
    wraps = """
    if args.gpu is not None:
        model = DDP(model.cuda(args.gpu), device_ids=[args.gpu])
    else:
        model = DDP(model)
"""
    assert _lines(tmp_path, wraps) == [20]


def test_elif_branch_one_finding(tmp_path: Path) -> None:
    wraps = """
    if args.gpu is not None:
        model = DDP(model, device_ids=[args.gpu])
    elif args.distributed:
        model = DDP(model)
"""
    assert _lines(tmp_path, wraps) == [20]


def test_wraps_in_sequence_stay_apart(tmp_path: Path) -> None:
    wraps = """
    if args.gpu is not None:
        model = DDP(model, device_ids=[args.gpu])
    if args.distributed:
        model = DDP(model)
"""
    assert len(_lines(tmp_path, wraps)) == 2
