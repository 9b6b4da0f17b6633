"""Project mode, round 14 of issue #27 (fix14b): the default of the option a SyncBatchNorm
conversion hangs on, where the testing file does not write it.

``if args.sync_bn: model = convert_sync_batchnorm(model)`` is trusted while the option's default is
unknown. It is known when the project writes it (lint/option_defaults.py): an argparse option of a
parser module (Point-BERT ``utils/parser.py``), a configuration class of another file (kaggle_islr
``class Config: syncbn = False``), a module-level setting of a shipped configuration
(``cfg.syncbn = False``), a key every shipped YAML configuration sets alike. Off by default: a
config-gated finding. On by default, or set both ways: trusted, as before.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.lint.project_facts import found_gated as _found
from tests.lint.project_facts import write_files as _write

RUNNER = """
    import torch
    import torch.nn as nn

    def run_net(args, loader, optimizer):
        model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))
        if args.distributed:
            if args.sync_bn:
                model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
            model = nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank])
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
"""

PARSER = """
    import argparse

    def get_args():
        parser = argparse.ArgumentParser()
        parser.add_argument('--local_rank', type=int, default=0)
        parser.add_argument('--sync_bn', action='{action}', help='whether to use sync bn')
        return parser.parse_args()
"""


def _parser_project(action: str) -> dict[str, str]:
    return {"tools/runner.py": RUNNER, "utils/parser.py": PARSER.format(action=action)}


def test_an_opt_in_flag_declared_in_a_parser_module_gates_the_conversion(tmp_path: Path) -> None:
    root = _write(tmp_path, _parser_project("store_true"))
    assert _found(root) == {("batchnorm-unsynced", "tools/runner.py", "sync_bn off (the default)")}


def test_a_flag_on_by_default_in_a_parser_module_is_trusted(tmp_path: Path) -> None:
    root = _write(tmp_path, _parser_project("store_false"))
    assert _found(root) == set()


def test_the_runner_alone_trusts_the_conversion(tmp_path: Path) -> None:
    root = _write(tmp_path, {"tools/runner.py": RUNNER})
    assert _found(root) == set()


# kaggle_islr: the trainer tests ``config.syncbn`` of a configuration class of the entry script
TRAIN_CONFIG = """
    import torch
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel

    def fit(config, loader, optimizer):
        model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8)).cuda()
        if config.distributed:
            if config.syncbn:
                model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
            model = DistributedDataParallel(model, device_ids=[config.local_rank])
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
"""

ENTRY_CONFIG = """
    from training.main import fit

    class Config:
        distributed = True
        syncbn = {value}
        epochs = 10

    if __name__ == "__main__":
        fit(Config, None, None)
"""


def test_a_configuration_class_of_another_file_gives_the_default(tmp_path: Path) -> None:
    root = _write(tmp_path, {"training/main.py": TRAIN_CONFIG, "main.py": ENTRY_CONFIG.format(value="False")})
    assert _found(root) == {("batchnorm-unsynced", "training/main.py", "syncbn off (the default)")}


def test_a_configuration_class_that_turns_it_on_is_trusted(tmp_path: Path) -> None:
    root = _write(tmp_path, {"training/main.py": TRAIN_CONFIG, "main.py": ENTRY_CONFIG.format(value="True")})
    assert _found(root) == set()


def test_configurations_written_both_ways_leave_the_default_unknown(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "training/main.py": TRAIN_CONFIG,
            "main.py": ENTRY_CONFIG.format(value="False"),
            "configs/large.py": "from types import SimpleNamespace\ncfg = SimpleNamespace()\ncfg.syncbn = True\n",
        },
    )
    assert _found(root) == set()


# Hydra/yacs: the option is a key of the YAML configurations the repository ships
YAML_TRAIN = """
    import torch
    import torch.nn as nn

    def main(cfg, loader, optimizer):
        model = nn.Sequential(nn.Conv3d(3, 8, 3), nn.BatchNorm3d(8))
        if cfg.sync_bn:
            model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        model = torch.nn.parallel.DistributedDataParallel(model)
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
"""


def test_every_shipped_yaml_configuration_turning_it_off_gates_the_conversion(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {"func/train.py": YAML_TRAIN, "conf/config.yaml": "sync_bn: false  # per-GPU statistics\nlr: 0.1\n"},
    )
    assert _found(root) == {("batchnorm-unsynced", "func/train.py", "sync_bn off (the default)")}


def test_a_shipped_yaml_configuration_turning_it_on_is_trusted(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "func/train.py": YAML_TRAIN,
            "conf/config.yaml": "sync_bn: false\n",
            "conf/experiment/large.yaml": "train:\n  SYNC_BN: True\n",
        },
    )
    assert _found(root) == set()


def test_code_off_but_a_yaml_configuration_on_is_trusted(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "tools/runner.py": RUNNER,
            "utils/parser.py": PARSER.format(action="store_true"),
            "cfg.yml": "sync_bn: yes\n",
        },
    )
    assert _found(root) == set()


# DRAGON: the wrapped model's constructor builds its GNN through a classmethod of a class of the same
# file (``LMGNN.from_pretrained(...)``), which builds ``cls(config, ...)``
GNN_MODELING = """
    import torch.nn as nn

    class GATConv(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.edge_encoder = nn.Sequential(nn.Linear(dim, dim), nn.{norm}(dim), nn.ReLU())

    class LMGNN(nn.Module):
        def __init__(self, config, dim=8):
            super().__init__()
            self.gnn = GATConv(dim)

        @classmethod
        def from_pretrained(cls, path, *model_args, **kwargs):
            config = {{"path": path}}
            model = cls(config, *model_args, **kwargs)
            return model

    class Dragon(nn.Module):
        def __init__(self, args, model_name="roberta-large"):
            super().__init__()
            self.lmgnn = LMGNN.from_pretrained(model_name, dim=16)
"""

DRAGON_TRAIN = """
    import torch
    from modeling import modeling_dragon

    def construct_model(args):
        return modeling_dragon.Dragon(args)

    def train(args, loader, optimizer):
        model = construct_model(args)
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank])
        for batch in loader:
            optimizer.zero_grad()
            model(*batch).sum().backward()
            optimizer.step()
"""


def test_a_class_built_through_its_own_classmethod_holds_its_batchnorm(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "modeling/__init__.py": "",
            "modeling/modeling_dragon.py": GNN_MODELING.format(norm="BatchNorm1d"),
            "dragon.py": DRAGON_TRAIN,
        },
    )
    assert _found(root) == {("batchnorm-unsynced", "dragon.py", None)}


def test_a_class_built_through_its_own_classmethod_without_batchnorm_is_silent(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "modeling/__init__.py": "",
            "modeling/modeling_dragon.py": GNN_MODELING.format(norm="LayerNorm"),
            "dragon.py": DRAGON_TRAIN,
        },
    )
    assert _found(root) == set()


# PixPro: ``models.__dict__[args.model]`` over a package whose one model converts its BatchNorm
# submodules itself (in place, the return value dropped)
PIXPRO_MODEL = """
    import torch.nn as nn

    class MLP2d(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.bn1 = nn.BatchNorm2d(dim)

    class PixPro(nn.Module):
        def __init__(self, base_encoder, args):
            super().__init__()
            self.encoder = base_encoder()
            self.projector = MLP2d(256)
            {convert}
"""

PIXPRO_TRAIN = """
    import torch
    from torch.nn.parallel import DistributedDataParallel
    from contrast import models

    def build_model(args):
        model = models.__dict__[args.model](None, args).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model = DistributedDataParallel(model, device_ids=[args.local_rank])
        return model, optimizer

    def main(args, loader):
        model, optimizer = build_model(args)
        for x in loader:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
"""


def _pixpro(convert: str) -> dict[str, str]:
    return {
        "contrast/__init__.py": "",
        "contrast/models/__init__.py": "from .PixPro import PixPro\n\n__all__ = ['PixPro']\n",
        "contrast/models/PixPro.py": PIXPRO_MODEL.format(convert=convert),
        "main_pretrain.py": PIXPRO_TRAIN,
    }


def test_a_registry_of_self_converting_models_is_silent(tmp_path: Path) -> None:
    root = _write(tmp_path, _pixpro("nn.SyncBatchNorm.convert_sync_batchnorm(self.projector)"))
    assert _found(root) == set()


def test_a_registry_of_models_that_do_not_convert_is_reported(tmp_path: Path) -> None:
    root = _write(tmp_path, _pixpro("self.out = nn.Identity()"))
    assert _found(root) == {("batchnorm-unsynced", "main_pretrain.py", None)}


def test_special_and_oversized_yaml_files_are_skipped_not_read(tmp_path: Path) -> None:
    """A hostile checkout: a FIFO and a link to an endless device named like configurations, and a
    configuration over the size cap, are never read (no hang, no unbounded memory); the cap file's
    value does not count."""
    from ddp_doctor.lint.option_defaults import MAX_YAML_BYTES, yaml_settings

    root = _write(tmp_path, {"func/train.py": YAML_TRAIN, "conf/config.yaml": "sync_bn: false\n"})
    os.mkfifo(root / "conf" / "fifo.yaml")
    (root / "conf" / "zero.yaml").symlink_to("/dev/zero")
    (root / "conf" / "huge.yaml").write_text("sync_bn: true\n" + "#" * (MAX_YAML_BYTES + 10) + "\n")
    assert yaml_settings(sorted((root / "conf").iterdir()), "sync_bn") == [False]
    assert _found(root) == {("batchnorm-unsynced", "func/train.py", "sync_bn off (the default)")}


def test_yaml_configurations_are_found_as_lint_finds_files(tmp_path: Path) -> None:
    """The YAML scan walks the project as lint walks source files: a folder that ``.gitignore`` lists
    (a local output), a hidden folder (CI workflows) and an installed package hold no configuration of
    the project, so their values do not count; a FIFO is skipped, not read."""
    from ddp_doctor.lint.option_defaults import yaml_files

    root = _write(
        tmp_path,
        {
            "conf/config.yaml": "sync_bn: false\n",
            "outputs/run1/config.yaml": "sync_bn: true\n",
            ".github/workflows/ci.yml": "sync_bn: true\n",
            "venv/lib/site-packages/pkg/cfg.yaml": "sync_bn: true\n",
            "lib/site-packages/pkg/cfg.yml": "sync_bn: true\n",
            ".gitignore": "outputs/\n",
        },
    )
    os.mkfifo(root / "conf" / "fifo.yaml")
    assert [p.relative_to(root).as_posix() for p in yaml_files(root)] == ["conf/config.yaml"]
