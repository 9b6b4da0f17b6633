"""Project mode, round 9 of issue #27 (fix9b): holdout-7's batchnorm-unsynced false alarm of a
project module named ``models`` used as a registry (SLIP). What the project's builders build
decides, not the torchvision guess the bare name ``models`` gets in file mode.
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found_gated as _found
from tests.lint.project_facts import write_files as _write

MAIN = """
    import torch
    import models

    def main(args):
        model = getattr(models, args.model)(mlp_dim=args.mlp_dim)
        if args.distributed:
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
        return model
"""


def _models(norm: str) -> str:
    return f"""
    import torch.nn as nn

    class Head(nn.Module):
        def __init__(self, width, mlp_dim):
            super().__init__()
            self.mlp = nn.Sequential(nn.Linear(width, mlp_dim), nn.{norm}(mlp_dim), nn.ReLU())

    def SIMCLR_VITS16(**kwargs):
        return Head(384, **kwargs)

    def SIMCLR_VITB16(**kwargs):
        return Head(768, **kwargs)
    """


def test_a_project_models_module_whose_builders_use_syncbatchnorm_is_synced(tmp_path: Path) -> None:
    root = _write(tmp_path, {"models.py": _models("SyncBatchNorm"), "main.py": MAIN})
    assert _found(root) == set()


def test_a_project_models_module_whose_builders_use_layernorm_has_no_batchnorm(tmp_path: Path) -> None:
    root = _write(tmp_path, {"models.py": _models("LayerNorm"), "main.py": MAIN})
    assert _found(root) == set()


def test_a_project_models_module_whose_builders_use_batchnorm_is_reported(tmp_path: Path) -> None:
    root = _write(tmp_path, {"models.py": _models("BatchNorm1d"), "main.py": MAIN})
    assert _found(root) == {("batchnorm-unsynced", "main.py", None)}
