"""Project mode, round 14 of issue #27 (fix14a): rank0-only-loss-log.

- ``self.m(...)`` in a method runs the method the class inherits when it defines none: a base
  class of another file (DBNet's ``Trainer(BaseTrainer)`` calls ``self.logger_info(loss_str)``,
  and ``BaseTrainer.logger_info`` logs only where ``self.config["local_rank"] == 0``). The call is
  the log event; the base's one-line print is not reported again.
- A logger set up by a function of another file (WARN on every rank but 0) and held under a name
  with "log" as one of its words (``Log_file``) silences the ``info`` records of the loss.
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found
from tests.lint.project_facts import write_files as _write

BASE = """
class BaseTrainer:
    def __init__(self, config, model, optimizer, logger):
        self.config = config
        self.model = model
        self.optimizer = optimizer
        self.logger = logger

    def logger_info(self, s):
        if GUARD:
            self.logger.info(s)
"""

TRAINER = """
from base.base_trainer import BaseTrainer


class Trainer(BaseTrainer):
    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            loss = self.model(batch)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            self.logger_info("step {} loss {:.4f}".format(i, loss.item()))
"""


def _trainer(tmp_path: Path, guard: str) -> Path:
    return _write(
        tmp_path,
        {
            "base/__init__.py": "",
            "base/base_trainer.py": BASE.replace("GUARD", guard),
            "trainer/__init__.py": "",
            "trainer/trainer.py": TRAINER,
        },
    )


def test_an_inherited_rank0_print_method_of_another_file_is_the_log_at_its_call(tmp_path: Path) -> None:
    root = _trainer(tmp_path, 'self.config["local_rank"] == 0')
    assert found(root) == {("rank0-only-loss-log", "trainer/trainer.py")}


def test_an_inherited_print_method_of_every_rank_is_not_reported(tmp_path: Path) -> None:
    assert found(_trainer(tmp_path, 'self.config["verbose"]')) == set()


SETUP = """
import logging


def setuplogger(rank):
    Log_file = logging.getLogger("Log_file")
    # a handler on every rank: with none off rank 0, Python's last-resort handler would drop ``info``
    Log_file.addHandler(logging.StreamHandler())
    if rank in [-1, 0]:
        Log_file.setLevel(logging.INFO)
    else:
        Log_file.setLevel(LEVEL)
    return Log_file
"""

RUN = """
import torch.distributed as dist
from utils import setuplogger


def train(model, loader, optimizer):
    total = 0.0
    for step, batch in enumerate(loader):
        bz_loss = model(batch)
        total += bz_loss.item()
        bz_loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % 100 == 0:
            Log_file.info("sum loss: {:.5f}".format(total))


if __name__ == "__main__":
    dist.init_process_group("nccl")
    Log_file = setuplogger(dist.get_rank())
    train(None, [], None)
"""


def _run(tmp_path: Path, level: str) -> Path:
    return _write(tmp_path, {"utils.py": SETUP.replace("LEVEL", level), "run.py": RUN})


def test_a_log_worded_logger_silenced_off_rank0_in_another_file_logs_rank0s_loss(tmp_path: Path) -> None:
    assert found(_run(tmp_path, "logging.WARN")) == {("rank0-only-loss-log", "run.py")}


def test_a_log_worded_logger_of_every_rank_is_not_reported(tmp_path: Path) -> None:
    assert found(_run(tmp_path, "logging.INFO")) == set()
