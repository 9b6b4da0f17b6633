"""Round 21 of issue #27: what the findings say and fix for the idioms added this round.

- set-epoch-missing for a ``set_epoch`` that passes the same value every epoch names the value and
  the loop, and its autofix passes the loop variable.
- Loaders kept in a dict by phase are named by their key in the message.
- A sampler drawn through a batch sampler is fixed by setting the sampler's epoch (torch's
  ``BatchSampler`` has no ``set_epoch``).
- batchnorm-unsynced on inplace_abn's ``InPlaceABN`` says that ``convert_sync_batchnorm`` does not
  convert it and offers no autofix (which would leave the layers per-GPU).
"""

from __future__ import annotations

from ddp_doctor.lint.engine import lint_source

HEAD = """
import os
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(args, dataset, net):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    criterion = nn.CrossEntropyLoss()
"""
STEP = """
            loss = criterion(model(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def _apply(source: str, edits: list) -> str:
    lines = source.splitlines(keepends=True)
    for e in sorted(edits, key=lambda e: (e.line, e.col), reverse=True):
        assert e.line == e.end_line
        text = lines[e.line - 1]
        lines[e.line - 1] = text[: e.col] + e.text + text[e.end_col :]
    return "".join(lines)


def test_same_epoch_every_pass_names_value_and_loop_and_fixes() -> None:
    source = (
        HEAD
        + """
    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epoch):
        sampler.set_epoch(args.epoch)
        for x, y in loader:"""
        + STEP
    )
    result = lint_source(source, "train.py", ("set-epoch-missing",))
    [finding] = result.findings
    assert finding.line == source.splitlines().index("        sampler.set_epoch(args.epoch)") + 1
    assert "`args.epoch`" in finding.summary.en and "same order every epoch" in finding.summary.en
    assert finding.evidence["epoch_loop_line"] == finding.line - 1
    fixed = _apply(source, result.edits)
    assert "sampler.set_epoch(epoch)" in fixed
    assert not lint_source(fixed, "train.py", ("set-epoch-missing",)).findings


def test_dict_loader_by_phase_is_followed() -> None:
    source = (
        HEAD
        + """
    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loaders = {}
    loaders["train"] = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    loaders["val"] = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, shuffle=False))
    for epoch in range(args.epochs):
        for x, y in loaders["train"]:"""
        + STEP
    )
    [finding] = lint_source(source, "train.py", ("set-epoch-missing",)).findings
    assert "DistributedSampler" in finding.summary.en
    assert (
        finding.line
        == source.splitlines().index(
            '    loaders["train"] = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))'
        )
        + 1
    )


def test_inplace_abn_has_its_own_fix_and_no_autofix() -> None:
    abn = (
        HEAD.replace("import os\n", "import os\nfrom inplace_abn import InPlaceABN\n")
        + """
    net = nn.Sequential(nn.Conv2d(3, 8, 3), InPlaceABN(8)).cuda()
    model = DDP(net, device_ids=[local_rank])
"""
    )
    result = lint_source(abn, "train.py", ("batchnorm-unsynced",))
    [finding] = result.findings
    assert "InPlaceABNSync" in finding.summary.en and "InPlaceABNSync" in finding.summary.zh
    assert not result.edits
    plain = abn.replace("InPlaceABN(8)", "nn.BatchNorm2d(8)")
    result = lint_source(plain, "train.py", ("batchnorm-unsynced",))
    [finding] = result.findings
    assert "InPlaceABNSync" not in finding.summary.en
    assert result.edits  # the usual conversion before the wrap


def test_batch_sampler_fix_sets_the_samplers_epoch() -> None:
    source = (
        HEAD
        + """
    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sampler = DistributedSampler(dataset)
    batch_sampler = torch.utils.data.BatchSampler(sampler, 8, drop_last=True)
    loader = DataLoader(dataset, batch_sampler=batch_sampler)
    for epoch in range(args.epochs):
        for x, y in loader:"""
        + STEP
    )
    result = lint_source(source, "train.py", ("set-epoch-missing",))
    [finding] = result.findings
    assert finding.line == source.splitlines().index("    sampler = DistributedSampler(dataset)") + 1
    fixed = _apply(source, result.edits)
    assert "        sampler.set_epoch(epoch)\n" in fixed
    assert "batch_sampler.set_epoch" not in fixed
    assert not lint_source(fixed, "train.py", ("set-epoch-missing",)).findings
