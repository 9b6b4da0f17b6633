"""Project mode, round 19 of issue #27.

- A leftover ``import torch.distributed as dist`` that nothing uses does not make a single-process
  ``nn.DataParallel`` script distributed, even beside a DDP script of the same directory (a script
  that calls ``dist.get_rank()`` is one).
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found
from tests.lint.project_facts import write_files as _write

DISTRIBUTED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def main(rank, model, dataset):
    dist.init_process_group("nccl")
    model = DDP(model.cuda(rank), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(10):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
"""

DATA_PARALLEL = """
import torch
import torch.distributed as dist
import torch.nn as nn


def main(model, dataset):
    model = nn.DataParallel(model.cuda())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(dataset, batch_size=256, num_workers=4)
    for epoch in range(10):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        USE
"""


def test_single_process_script_with_an_unused_dist_import_is_not_distributed(tmp_path: Path) -> None:
    root = _write(
        tmp_path, {"distributed.py": DISTRIBUTED, "dataparallel.py": DATA_PARALLEL.replace("USE", "pass")}
    )
    assert found(root) == set()


def test_a_script_that_uses_dist_beside_a_ddp_script_is_distributed(tmp_path: Path) -> None:
    use = "print(dist.get_rank())"
    root = _write(
        tmp_path, {"distributed.py": DISTRIBUTED, "dataparallel.py": DATA_PARALLEL.replace("USE", use)}
    )
    assert found(root) == {("sampler-missing", "dataparallel.py")}
