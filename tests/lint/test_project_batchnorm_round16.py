"""Project mode, round 16 of issue #27 (fix16b): BatchNorm reached through a package's builder
and BatchNorm that a default-off switch leaves out.

A package's ``__init__.py`` often holds the builder that dispatches to its classes by name
(nanodet ``build_backbone(cfg)`` returning ``ShuffleNetV2(**cfg)``) and mentions none of the words
the index's text pre-check looks for: it is read all the same, so what it builds reaches the
LightningModule or model that calls it. A BatchNorm layer built only under a parameter that
defaults to off (``nn.BatchNorm2d(d) if use_bn else nn.Identity()``), like a project class built
that way, is not in what its def builds on the default path; nor is a callee handed that switch
(``make_fusion_block(d, use_bn)``).
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found_gated as _found
from tests.lint.project_facts import write_files as _write

TRAIN = """
    import pytorch_lightning as pl
    import torch
    from pkg.task import TrainingTask

    def main(gpu_ids, loader):
        task = TrainingTask()
        strategy = None
        if len(gpu_ids) > 1:
            strategy = "ddp"
        trainer = pl.Trainer(accelerator="gpu", devices=gpu_ids, strategy=strategy)
        trainer.fit(task, loader)
"""

TASK = """
    import pytorch_lightning as pl
    import torch
    from pkg.backbone import build_backbone

    class TrainingTask(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = build_backbone({"name": "ConvNet"})

        def training_step(self, batch, batch_idx):
            return self.model(batch).mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)
"""

BUILDER = """
    import copy
    from .convnet import ConvNet

    def build_backbone(cfg):
        cfg = copy.deepcopy(cfg)
        name = cfg.pop("name")
        if name == "ConvNet":
            return ConvNet(**cfg)
        raise NotImplementedError
"""

CONVNET = """
    import torch.nn as nn

    class ConvNet(nn.Module):
        def __init__(self, width=16{switch}):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(3, width, 3), {norm}, nn.ReLU())
"""


def _project(switch: str = "", norm: str = "nn.BatchNorm2d(width)") -> dict[str, str]:
    return {
        "tools/train.py": TRAIN,
        "pkg/__init__.py": "",
        "pkg/task.py": TASK,
        "pkg/backbone/__init__.py": BUILDER,
        "pkg/backbone/convnet.py": CONVNET.format(switch=switch, norm=norm),
    }


def test_a_package_builder_in_init_carries_batchnorm_to_the_lightning_module(tmp_path: Path) -> None:
    root = _write(tmp_path, _project())
    assert _found(root) == {("batchnorm-unsynced", "tools/train.py", "strategy = 'ddp' (line 10)")}


def test_batchnorm_under_a_switch_that_defaults_off_is_not_built(tmp_path: Path) -> None:
    root = _write(tmp_path, _project(", use_bn=False", "nn.BatchNorm2d(width) if use_bn else nn.Identity()"))
    assert _found(root) == set()


HANDED_SWITCH = """
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, width, bn):
            super().__init__()
            self.bn = bn
            if self.bn == True:
                self.norm = nn.BatchNorm2d(width)

    def make_block(width, use_bn):
        return Block(width, bn=use_bn)

    class ConvNet(nn.Module):
        def __init__(self, width=16, use_bn=False):
            super().__init__()
            self.block = make_block(width, use_bn)
"""


def test_a_callee_handed_a_switch_that_defaults_off_builds_no_batchnorm(tmp_path: Path) -> None:
    files = _project()
    files["pkg/backbone/convnet.py"] = HANDED_SWITCH
    root = _write(tmp_path, files)
    assert _found(root) == set()


def test_a_callee_handed_the_switch_on_builds_batchnorm(tmp_path: Path) -> None:
    files = _project()
    files["pkg/backbone/convnet.py"] = HANDED_SWITCH.replace("use_bn=False", "use_bn=True")
    root = _write(tmp_path, files)
    assert _found(root) == {("batchnorm-unsynced", "tools/train.py", "strategy = 'ddp' (line 10)")}
