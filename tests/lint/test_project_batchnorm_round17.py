"""Project mode, round 17 of issue #27 (fix17c): BatchNorm built only under a parameter that
defaults to off.

A building block that appends BatchNorm only when asked (MIMO-UNet-style ``BasicConv(..., norm=False)``
with ``if norm: layers.append(nn.BatchNorm2d(c))``; ``conv_block(cin, cout, use_bn=False)``) builds no
BatchNorm for a caller that never passes that parameter. The project index records the parameter
(``Summary.bn_switch``) and what each call hands the block (``Summary.switch_calls``): a caller builds
BatchNorm only where a call may pass it (by keyword with a value other than False/None, by position,
or through ``*args``/``**kwargs``). A block referenced by name without a call (a subclass, ``block=BasicConv``)
is counted as building it, as before.
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found as _found
from tests.lint.project_facts import write_files as _write

BLOCKS = """
    import torch.nn as nn

    class BasicConv(nn.Module):
        def __init__(self, cin, cout, kernel_size, stride, bias=True, norm=False, relu=True):
            super(BasicConv, self).__init__()
            layers = [nn.Conv2d(cin, cout, kernel_size, stride=stride, padding=kernel_size // 2, bias=bias)]
            if norm:
                layers.append(nn.BatchNorm2d(cout))
            if relu:
                layers.append(nn.ReLU(inplace=True))
            self.main = nn.Sequential(*layers)

        def forward(self, x):
            return self.main(x)

    class Net(nn.Module):
        def __init__(self, c=32):
            super().__init__()
            self.body = nn.Sequential(BasicConv(3, c, 3, 1), {second})

        def forward(self, x):
            return self.body(x)
"""

TRAIN = """
    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    from model.blocks import Net

    def train(rank, loader):
        model = Net().cuda(rank)
        optimizer = torch.optim.Adam(model.parameters())
        model = DDP(model, device_ids=[rank])
        for x, y in loader:
            optimizer.zero_grad()
            F.l1_loss(model(x), y).backward()
            optimizer.step()
"""


def _project(second: str) -> dict[str, str]:
    return {"model/blocks.py": BLOCKS.format(second=second), "train.py": TRAIN}


def test_a_norm_switch_no_caller_passes_builds_no_batchnorm(tmp_path: Path) -> None:
    root = _write(tmp_path, _project("BasicConv(c, c, 3, 2, relu=False)"))
    assert ("batchnorm-unsynced", "train.py") not in _found(root)


def test_a_caller_passing_the_switch_by_keyword_builds_batchnorm(tmp_path: Path) -> None:
    root = _write(tmp_path, _project("BasicConv(c, c, 3, 2, norm=True)"))
    assert ("batchnorm-unsynced", "train.py") in _found(root)


def test_a_caller_passing_the_switch_by_position_builds_batchnorm(tmp_path: Path) -> None:
    root = _write(tmp_path, _project("BasicConv(c, c, 3, 2, False, True)"))
    assert ("batchnorm-unsynced", "train.py") in _found(root)


def test_the_switch_passed_as_false_builds_no_batchnorm(tmp_path: Path) -> None:
    root = _write(tmp_path, _project("BasicConv(c, c, 3, 2, norm=False)"))
    assert ("batchnorm-unsynced", "train.py") not in _found(root)


def test_a_subclass_of_the_block_still_counts(tmp_path: Path) -> None:
    # the subclass hands the switch to its base through super().__init__: not followed, counted
    files = _project("NormConv(c, c)")
    files["model/blocks.py"] += (
        "\n    class NormConv(BasicConv):\n"
        "        def __init__(self, cin, cout):\n"
        "            super().__init__(cin, cout, 3, 1, norm=True)\n"
    )
    root = _write(tmp_path, files)
    assert ("batchnorm-unsynced", "train.py") in _found(root)
