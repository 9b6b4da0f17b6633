"""Project mode, round 8 of issue #27 (fix8b): BatchNorm models that reach a DDP wrap from another
file or by a name chosen at run time (holdout-6's batchnorm-unsynced misses).

Each case is a small project shaped like the real script that was missed; the corrected variant
must stay silent (precision).
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found_gated as _found
from tests.lint.project_facts import write_files as _write

BN_MODEL = """
    import torch.nn as nn

    class Backbone(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.bn = nn.BatchNorm2d(n)

    def make_model(cfg):
        return Backbone(cfg.width)
"""

# TransReID: train.py builds the model and hands it to do_train, which wraps it in DDP and trains it.
HANDED = {
    "model/__init__.py": "from .make_model import make_model\n",
    "model/make_model.py": BN_MODEL,
    "processor/__init__.py": "from .processor import do_train\n",
    "processor/processor.py": """
        import torch

        def do_train(cfg, model, loader, optimizer, local_rank):
            model.to(local_rank)
            if cfg.DIST_TRAIN:
                model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
            for x, y in loader:
                optimizer.zero_grad()
                model(x).sum().backward()
                optimizer.step()
    """,
    "train.py": """
        from model import make_model
        from processor import do_train

        def main(cfg, loader, optimizer, local_rank):
            model = make_model(cfg)
            do_train(cfg, model, loader, optimizer, local_rank)
    """,
}


def test_a_trainer_wrapping_the_model_it_was_handed_reports_the_callers_batchnorm(tmp_path: Path) -> None:
    root = _write(tmp_path, HANDED)
    assert _found(root) == {("batchnorm-unsynced", "processor/processor.py", None)}


def test_a_model_converted_before_it_is_handed_is_synced(tmp_path: Path) -> None:
    files = dict(HANDED)
    files["train.py"] = """
        import torch.nn as nn
        from model import make_model
        from processor import do_train

        def main(cfg, loader, optimizer, local_rank):
            model = make_model(cfg)
            model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
            do_train(cfg, model, loader, optimizer, local_rank)
    """
    assert _found(_write(tmp_path, files)) == set()


def test_a_handed_model_without_batchnorm_is_not_reported(tmp_path: Path) -> None:
    files = dict(HANDED)
    files["model/make_model.py"] = BN_MODEL.replace("nn.BatchNorm2d(n)", "nn.LayerNorm(n)")
    assert _found(_write(tmp_path, files)) == set()


# MhLiao/DB: the backbone is picked by name from a package that re-exports its BatchNorm builders.
REEXPORTED = {
    "backbones/__init__.py": "from .resnet import resnet18, resnet50\n",
    "backbones/resnet.py": """
        import torch.nn as nn

        class ResNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn1 = nn.BatchNorm2d(64)

        def resnet18():
            return ResNet()

        def resnet50():
            return ResNet()
    """,
    "structure/model.py": """
        import torch.nn as nn
        import backbones

        class BasicModel(nn.Module):
            def __init__(self, args):
                super().__init__()
                self.backbone = getattr(backbones, args["backbone"])()

        def parallelize(model, local_rank):
            return nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])

        class SegModel(nn.Module):
            def __init__(self, args, local_rank):
                super().__init__()
                self.model = parallelize(BasicModel(args), local_rank)

            def step(self, x, optimizer):
                self.model(x).sum().backward()
                optimizer.step()
    """,
}


def test_a_package_used_as_a_registry_holds_what_it_reexports(tmp_path: Path) -> None:
    assert _found(_write(tmp_path, REEXPORTED)) == {("batchnorm-unsynced", "structure/model.py", None)}


# HigherHRNet / hysts: the model module is chosen by a configured name under a project package.
BY_NAME = {
    "lib/models/__init__.py": "import models.pose_net\n",
    "lib/models/pose_net.py": """
        import torch.nn as nn

        class PoseNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.BatchNorm2d(32)

        def get_pose_net(cfg, is_train):
            return PoseNet()
    """,
    "lib/config/models.py": "MODEL_EXTRAS = {}\n",
    "lib/config/default.py": """
        # defaults of the pose model (a yacs config read by update_config)
        from yacs.config import CfgNode as CN
        _C = CN()
        _C.MODEL = CN()
        _C.MODEL.NAME = "pose_net"
        _C.MODEL.SYNC_BN = False
    """,
    "tools/train.py": """
        import torch
        import torch.nn as nn
        import models

        def main_worker(cfg, gpu, loader, optimizer):
            model = eval("models." + cfg.MODEL.NAME + ".get_pose_net")(cfg, is_train=True)
            if cfg.MODEL.SYNC_BN:
                model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[gpu])
            for x in loader:
                model(x).sum().backward()
                optimizer.step()
    """,
}


def test_a_builder_named_under_a_project_package_by_eval_builds_its_batchnorm(tmp_path: Path) -> None:
    assert _found(_write(tmp_path, BY_NAME)) == {
        ("batchnorm-unsynced", "tools/train.py", "SYNC_BN off (the default)")
    }


def test_a_module_imported_by_name_then_its_class_builds_its_batchnorm(tmp_path: Path) -> None:
    files = {
        "pic/__init__.py": "",
        "pic/models/__init__.py": """
            import importlib
            import torch.nn as nn

            def create_model(config):
                module = importlib.import_module("pic.models" f".{config.model.type}.{config.model.name}")
                return getattr(module, "Network")(config)

            def wrap(config, model):
                return nn.parallel.DistributedDataParallel(model, device_ids=[config.local_rank])
        """,
        "pic/models/cifar/__init__.py": "",
        "pic/models/cifar/resnet.py": """
            import torch.nn as nn

            class Network(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.bn = nn.BatchNorm2d(16)
        """,
        "pic/models/cifar/vit.py": """
            import torch.nn as nn

            class Network(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.norm = nn.BatchNorm1d(16)
        """,
        "train.py": """
            from pic.models import create_model, wrap

            def main(config, loader, optimizer):
                model = wrap(config, create_model(config))
                for x in loader:
                    model(x).sum().backward()
                    optimizer.step()
        """,
    }
    assert ("batchnorm-unsynced", "pic/models/__init__.py", None) in _found(_write(tmp_path, files))


def test_a_name_chosen_among_layernorm_models_is_not_batchnorm(tmp_path: Path) -> None:
    files = dict(BY_NAME)
    files["lib/models/pose_net.py"] = files["lib/models/pose_net.py"].replace(
        "nn.BatchNorm2d(32)", "nn.LayerNorm(32)"
    )
    assert _found(_write(tmp_path, files)) == set()
