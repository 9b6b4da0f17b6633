"""Project mode, round 10 of issue #27 (fix10b): a logger class of another file whose method logs
what it is handed through a same-file helper (vilbert ``tbLogger.step_train`` -> ``self.linePlot``
-> ``self.logger.add_scalar``), reached through an object the entry function builds from that class,
also when the object is rebound from a checkpoint on resume.
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found
from tests.lint.project_facts import write_files as _write


def _logger(log_call: str) -> str:
    return f"""
    from torch.utils.tensorboard import SummaryWriter

    class TbLogger:
        def __init__(self, log_dir):
            self.writer = SummaryWriter(log_dir=log_dir)
            self.task_loss = {{}}

        def line_plot(self, step, val, key):
            {log_call}

        def step_train(self, epoch, step, loss, task_id):
            self.task_loss[task_id] = self.task_loss.get(task_id, 0.0) + loss
            self.line_plot(step, loss, "loss")
    """


def _main(value: str, resume: bool = False) -> str:
    rebind = '            tb = checkpoint["tb_logger"]\n' if resume else ""
    return f"""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    import utils


    def main(args, model, loader, optimizer, checkpoint=None):
        tb = utils.TbLogger("runs")
        if checkpoint is not None:
{rebind}            pass
        default_gpu = False
        if dist.get_rank() == 0:
            default_gpu = True
        model = DDP(model)
        for step, batch in enumerate(loader):
            loss = model(batch).mean()
            loss.backward()
            optimizer.step()
            if default_gpu:
                tb.step_train(0, step, {value}, "task")
    """


LOGS = "self.writer.add_scalar(key, val, step)"
STORES = "self.task_loss[key] = val"


def test_a_logger_method_that_logs_through_its_own_helper_logs_the_loss(tmp_path: Path) -> None:
    root = _write(tmp_path, {"utils.py": _logger(LOGS), "main.py": _main("float(loss)")})
    assert found(root) == {("rank0-only-loss-log", "main.py")}


def test_the_logger_object_rebound_from_a_checkpoint_is_still_that_class(tmp_path: Path) -> None:
    root = _write(tmp_path, {"utils.py": _logger(LOGS), "main.py": _main("float(loss)", resume=True)})
    assert found(root) == {("rank0-only-loss-log", "main.py")}


def test_a_helper_that_only_stores_its_value_logs_nothing(tmp_path: Path) -> None:
    root = _write(tmp_path, {"utils.py": _logger(STORES), "main.py": _main("float(loss)")})
    assert found(root) == set()


def test_a_reduced_value_handed_to_the_logger_is_not_reported(tmp_path: Path) -> None:
    main = _main("reduced").replace(
        "            if default_gpu:",
        "            reduced = loss.detach().clone()\n            dist.all_reduce(reduced)\n            if default_gpu:",
    )
    root = _write(tmp_path, {"utils.py": _logger(LOGS), "main.py": main})
    assert found(root) == set()
