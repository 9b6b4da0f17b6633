"""Project mode, round 10 of issue #27 (fix10a, precision): false alarms of the round-10 precision sweep
(docs/lint-sweep-10.md), fixed at their roots.
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found as _found
from tests.lint.project_facts import write_files as _write

# ml-mdm: a step function that backprops on every call and steps only when told the micro-batch
# is the last; its caller in another file decides which calls run under ``no_sync``.
STEP = """
    def train_batch(model, sample, optimizer, accumulate_gradient=False, num_grad_accumulations=1):
        loss = model(sample).mean() / num_grad_accumulations
        loss.backward()
        if not accumulate_gradient:
            optimizer.step()
            optimizer.zero_grad()
        return loss.item()
"""


def _main(call: str) -> str:
    return f"""
    from contextlib import nullcontext
    import torch
    import trainer

    def main(model, loader, optimizer, accum, local_rank):
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
        counter = 0
        for sample in loader:
            counter = (counter + 1) % accum
            accumulate_gradient = counter != 0
{call}
    """


SYNCED = """\
            if accumulate_gradient:
                ctx = model.no_sync() if hasattr(model, "no_sync") else nullcontext()
                with ctx:
                    trainer.train_batch(model, sample, optimizer, accumulate_gradient, accum)
            else:
                trainer.train_batch(model, sample, optimizer, accumulate_gradient, accum)"""
UNSYNCED = """\
            trainer.train_batch(model, sample, optimizer, accumulate_gradient, accum)"""


def test_a_step_function_whose_caller_in_another_file_skips_the_sync_is_not_reported(tmp_path: Path) -> None:
    root = _write(tmp_path, {"trainer.py": STEP, "main.py": _main(SYNCED)})
    assert _found(root) == set()


def test_a_step_function_whose_caller_never_skips_the_sync_is_reported(tmp_path: Path) -> None:
    root = _write(tmp_path, {"trainer.py": STEP, "main.py": _main(UNSYNCED)})
    assert _found(root) == {("accum-no-sync-missing", "trainer.py")}


# LatentSync: a BatchNorm scoring network of another module, built beside the UNet that is wrapped.
EVAL_NET = """
    import torch.nn as nn

    class SyncNetEval(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Conv2d(3, 64, 3), nn.BatchNorm2d(64))
"""
UNET = """
    import torch.nn as nn

    class UNet(nn.Module):
        def __init__(self, scorer=None):
            super().__init__()
            self.net = nn.Sequential(nn.Conv2d(4, 64, 3), nn.GroupNorm(8, 64))
            self.scorer = scorer
"""


def _trainer(unet_args: str) -> str:
    return f"""
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    from evalnet import SyncNetEval
    from unet import UNet

    def main(local_rank, loader):
        syncnet_eval_model = SyncNetEval().to(local_rank)
        unet = UNet({unet_args}).to(local_rank)
        unet = DDP(unet, device_ids=[local_rank])
        optimizer = torch.optim.AdamW(unet.parameters())
        for x in loader:
            loss = unet(x).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        return syncnet_eval_model
    """


def test_batchnorm_in_a_network_the_wrap_is_not_handed_is_not_reported(tmp_path: Path) -> None:
    root = _write(tmp_path, {"evalnet.py": EVAL_NET, "unet.py": UNET, "train.py": _trainer("")})
    assert _found(root) == set()


def test_batchnorm_in_a_network_handed_into_the_wrapped_model_is_reported(tmp_path: Path) -> None:
    files = {"evalnet.py": EVAL_NET, "unet.py": UNET, "train.py": _trainer("scorer=syncnet_eval_model")}
    root = _write(tmp_path, files)
    assert _found(root) == {("batchnorm-unsynced", "train.py")}


# efficientvit: the wrap is a project method handed the run configuration, not the model; the
# BatchNorm model went into the trainer object before (the finding stays at the helper call).
TRAINER = """
    import torch.nn as nn

    class Trainer:
        def __init__(self, model):
            self.model = model

        def prep_for_training(self, run_config):
            self.run_config = run_config
            self.model = nn.parallel.DistributedDataParallel(self.model.cuda(), device_ids=[0])

        def train(self, loader, optimizer):
            for x in loader:
                loss = self.model(x).mean()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
"""
ENTRY = """
    import torch.nn as nn
    from trainer import Trainer

    def main(config):
        run_config = dict(config)
        model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))
        trainer = Trainer(model=model)
        trainer.prep_for_training(run_config)
"""


def test_a_helper_wrap_handed_the_config_keeps_the_batchnorm_finding(tmp_path: Path) -> None:
    root = _write(tmp_path, {"trainer.py": TRAINER, "main.py": ENTRY})
    assert ("batchnorm-unsynced", "main.py") in _found(root)
