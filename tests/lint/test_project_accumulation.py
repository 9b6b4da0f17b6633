"""Project mode: accumulation whose backward and optimizer step live in helpers of another file.

CosyVoice/wenet-style executors call ``batch_backward(model, scaler, info_dict)`` (a backward of an
item of its parameter) and ``update_parameter_and_lr(...)`` (steps only when ``(batch_idx + 1) %
accum_grad == 0``) from ``train_utils.py``: the executor's loop is an accumulation loop although
neither a ``.backward`` nor an ``optimizer.step`` is written in it.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from ddp_doctor.lint.context import walk_local
from ddp_doctor.lint.loops import param_backward
from tests.lint.project_facts import found, write_files

TRAIN_UTILS = """
    from torch.nn.parallel import DistributedDataParallel

    def wrap(model):
        return DistributedDataParallel(model)

    def batch_backward(model, scaler, info_dict):
        scaled_loss = info_dict["loss_dict"]["loss"] / info_dict["accum_grad"]
        scaler.scale(scaled_loss).backward()
        info_dict["loss_dict"]["loss"] = scaled_loss
        return info_dict

    def update_parameter_and_lr(model, optimizer, scaler, info_dict):
        if (info_dict["batch_idx"] + 1) % info_dict["accum_grad"] == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
        return info_dict
"""

EXECUTOR = """
    from contextlib import nullcontext
    from train_utils import batch_backward, update_parameter_and_lr

    def train_one_epoch(model, optimizer, optimizer_d, scaler, loader, info_dict):
        for batch_idx, batch in enumerate(loader):
            info_dict["batch_idx"] = batch_idx
            if (batch_idx + 1) % info_dict["accum_grad"] != 0:
                context = model.no_sync
            else:
                context = nullcontext
            with context():
                info_dict["loss_dict"] = model(batch)
                info_dict = batch_backward(model, scaler, info_dict)
            info_dict = update_parameter_and_lr(model, optimizer, scaler, info_dict)
            optimizer_d.zero_grad()
"""


def _found(root: Path, files: dict[str, str], project: bool = True) -> set[tuple[str, str]]:
    return found(write_files(root, files), project)


def test_zero_grad_every_micro_step_of_a_loop_whose_backward_and_step_are_helpers(tmp_path: Path) -> None:
    found = _found(tmp_path, {"train_utils.py": TRAIN_UTILS, "executor.py": EXECUTOR})
    assert found == {("zero-grad-inside-accum", "executor.py")}


def test_the_same_loop_without_the_stray_zero_grad_is_clean(tmp_path: Path) -> None:
    executor = EXECUTOR.replace("            optimizer_d.zero_grad()\n", "")
    assert _found(tmp_path, {"train_utils.py": TRAIN_UTILS, "executor.py": executor}) == set()


def test_without_no_sync_the_ddp_loop_all_reduces_every_micro_step(tmp_path: Path) -> None:
    executor = EXECUTOR.replace("            optimizer_d.zero_grad()\n", "").replace(
        "context = model.no_sync", "context = nullcontext"
    )
    found = _found(tmp_path, {"train_utils.py": TRAIN_UTILS, "executor.py": executor})
    assert found == {("accum-no-sync-missing", "executor.py")}


def test_a_helper_that_steps_on_every_call_makes_no_accumulation_loop(tmp_path: Path) -> None:
    utils = TRAIN_UTILS.replace(
        '        if (info_dict["batch_idx"] + 1) % info_dict["accum_grad"] == 0:\n', "        if True:\n"
    )
    assert _found(tmp_path, {"train_utils.py": utils, "executor.py": EXECUTOR}) == set()


def test_file_mode_cannot_see_the_helpers(tmp_path: Path) -> None:
    found = _found(tmp_path, {"train_utils.py": TRAIN_UTILS, "executor.py": EXECUTOR}, project=False)
    assert ("zero-grad-inside-accum", "executor.py") not in found


def _param_backward(source: str) -> tuple[str, int, bool] | None:
    fn = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(fn, ast.FunctionDef)
    return param_backward(fn, list(walk_local(fn)))


def test_backward_of_an_item_of_a_parameter_through_a_scaled_local() -> None:
    assert _param_backward(
        """
        def batch_backward(model, scaler, info_dict):
            if info_dict["engine"] == "deepspeed":
                scaled_loss = model.backward(info_dict["loss_dict"]["loss"])
            else:
                scaled_loss = info_dict["loss_dict"]["loss"] / info_dict["accum_grad"]
                scaler.scale(scaled_loss).backward()
            return info_dict
        """
    ) == ("info_dict", 2, False)


def test_a_loss_combined_from_locals_is_not_the_weight_parameter() -> None:
    # ``args`` only weighs the terms: a call of this function is no backward of ``args``
    assert (
        _param_backward(
            """
            def train_one_epoch(args, model, batch):
                loss_e, loss_f = model(batch)
                loss = args.energy_weight * loss_e + args.force_weight * loss_f
                loss.backward()
            """
        )
        is None
    )
    assert (
        _param_backward(
            """
            def train_step(self, batch):
                loss = self.model(batch)
                loss.backward()
            """
        )
        is None
    )
