"""Project mode, round 11 of issue #27 (fix11c): a logger class of another file keeps what its method
is handed in an attribute (gmflow ``Logger.push(metrics)``: ``self.running_loss[key] += metrics[key]``)
and another of its methods writes that attribute (``summary_writer.add_scalar(..., self.running_loss[k]
/ self.summary_freq, ...)``): the method logs its argument, so a rank-0 call of it with the local loss
is reported. An attribute no log call of the class reads is not a log.
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found
from tests.lint.project_facts import write_files as _write

LOGGER = """
class Logger:
    def __init__(self, summary_writer, summary_freq=100):
        self.total_steps = 0
        self.running_loss = {}
        self.kept = {}
        self.summary_writer = summary_writer
        self.summary_freq = summary_freq

    def print_training_status(self, mode="train"):
        for k in self.running_loss:
            self.summary_writer.add_scalar(mode + "/" + k, self.running_loss[k] / self.summary_freq, self.total_steps)
            self.running_loss[k] = 0.0

    def push(self, metrics, mode="train"):
        self.total_steps += 1
        for key in metrics:
            self.ATTR[key] = self.ATTR.get(key, 0.0) + metrics[key]
        if self.total_steps % self.summary_freq == 0:
            self.print_training_status(mode)
"""

MAIN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.tensorboard import SummaryWriter

from utils.logger import Logger


def main(args, model, loader, optimizer):
    dist.init_process_group("nccl")
    model = DDP(model)
    if args.local_rank == 0:
        logger = Logger(SummaryWriter(args.checkpoint_dir), args.summary_freq)
    for img, target in loader:
        loss = torch.nn.functional.l1_loss(model(img), target)
        metrics = {{"total_loss": {value}}}
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if args.local_rank == 0:
            logger.push(metrics)
"""


def _project(tmp_path: Path, attr: str, value: str) -> Path:
    return _write(
        tmp_path,
        {
            "utils/__init__.py": "",
            "utils/logger.py": LOGGER.replace("ATTR", attr),
            "main.py": MAIN.format(value=value),
        },
    )


def test_a_logger_method_that_accumulates_into_a_written_attribute_logs_its_argument(tmp_path: Path) -> None:
    assert found(_project(tmp_path, "running_loss", "loss.item()")) == {("rank0-only-loss-log", "main.py")}


def test_an_attribute_no_log_call_reads_is_no_log(tmp_path: Path) -> None:
    assert found(_project(tmp_path, "kept", "loss.item()")) == set()


def test_the_accumulating_logger_fed_a_reduced_loss_is_not_reported(tmp_path: Path) -> None:
    main_value = "reduced.item()"
    root = _project(tmp_path, "running_loss", main_value)
    text = (
        (root / "main.py")
        .read_text(encoding="utf-8")
        .replace(
            "        metrics = {",
            "        reduced = loss.detach().clone()\n        dist.all_reduce(reduced)\n        metrics = {",
        )
    )
    (root / "main.py").write_text(text, encoding="utf-8")
    assert found(root) == set()
