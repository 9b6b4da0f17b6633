"""Project mode, round 19 of issue #27.

- A leftover ``import torch.distributed as dist`` that nothing uses does not make a single-process
  ``nn.DataParallel`` script distributed, even beside a DDP script of the same directory (a script
  that calls ``dist.get_rank()`` is one).
"""

from __future__ import annotations

from pathlib import Path

from tests.lint.project_facts import found
from tests.lint.project_facts import write_files as _write

DISTRIBUTED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def main(rank, model, dataset):
    dist.init_process_group("nccl")
    model = DDP(model.cuda(rank), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(10):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
"""

DATA_PARALLEL = """
import torch
import torch.distributed as dist
import torch.nn as nn


def main(model, dataset):
    model = nn.DataParallel(model.cuda())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(dataset, batch_size=256, num_workers=4)
    for epoch in range(10):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        USE
"""


def test_single_process_script_with_an_unused_dist_import_is_not_distributed(tmp_path: Path) -> None:
    root = _write(
        tmp_path, {"distributed.py": DISTRIBUTED, "dataparallel.py": DATA_PARALLEL.replace("USE", "pass")}
    )
    assert found(root) == set()


def test_a_script_that_uses_dist_beside_a_ddp_script_is_distributed(tmp_path: Path) -> None:
    use = "print(dist.get_rank())"
    root = _write(
        tmp_path, {"distributed.py": DISTRIBUTED, "dataparallel.py": DATA_PARALLEL.replace("USE", use)}
    )
    assert found(root) == {("sampler-missing", "dataparallel.py")}


# --- a model picked by name from torchvision in another file; a namespace package beside the script ---

BACKBONE = """
import torchvision
from torch import nn


class Backbone(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.body = getattr(torchvision.models, name)(NORM)


def build_backbone(args):
    return Backbone(args.backbone)
"""

DETR_MAIN = """
import torch
import torch.distributed as dist
from models.detr import build_model


def train(args):
    dist.init_process_group("nccl")
    net, criterion = build_model(args)
    net = torch.nn.parallel.DistributedDataParallel(net.cuda(), device_ids=[args.local_rank])
"""

DETR_INIT = """
from .backbone import build_backbone


def build_model(args):
    return build_backbone(args), None
"""


def _detr(tmp_path: Path, norm: str) -> Path:
    # two copies of the project side by side (RNGDet++'s cityscale/ and spacenet/), each a script beside
    # a ``models/`` namespace package (no ``__init__.py``) that the script imports as ``models.detr``
    files = {}
    for copy in ("cityscale", "spacenet"):
        files[f"{copy}/main_train.py"] = DETR_MAIN
        files[f"{copy}/models/detr/__init__.py"] = DETR_INIT
        files[f"{copy}/models/detr/backbone.py"] = BACKBONE.replace("NORM", norm)
    return _write(tmp_path, files)


def test_torchvision_model_picked_by_name_in_a_namespace_package_beside_the_script(tmp_path: Path) -> None:
    found_here = found(_detr(tmp_path, "pretrained=True"))
    assert found_here == {
        ("batchnorm-unsynced", "cityscale/main_train.py"),
        ("batchnorm-unsynced", "spacenet/main_train.py"),
    }


def test_torchvision_model_picked_with_frozen_batchnorm_is_not_reported(tmp_path: Path) -> None:
    norm = "pretrained=True, norm_layer=torchvision.ops.misc.FrozenBatchNorm2d"
    assert found(_detr(tmp_path, norm)) == set()


# --- a writer class that writes on rank 0 only, built by a project function of another file ------

DIST_UTILS = """
import torch.distributed as dist
from torch.utils.tensorboard import SummaryWriter


def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


def can_log():
    return is_main_process()


class DistSummaryWriter(SummaryWriter):
    def __init__(self, *args, **kwargs):
        if can_log():
            super().__init__(*args, **kwargs)

    def add_scalar(self, *args, **kwargs):
        GUARD
            super().add_scalar(*args, **kwargs)
"""

COMMON = """
from utils.dist_utils import DistSummaryWriter


def get_logger(work_dir):
    logger = DistSummaryWriter(work_dir)
    return logger
"""

UFLD_TRAIN = """
import torch
import torch.distributed as dist
from utils.common import get_logger


def calc_loss(loss_dict, results, logger, global_step):
    loss = 0
    for i in range(len(loss_dict["name"])):
        loss_cur = loss_dict["op"][i](results)
        if global_step % 20 == 0:
            logger.add_scalar("loss/" + loss_dict["name"][i], loss_cur, global_step)
        loss += loss_cur * loss_dict["weight"][i]
    return loss


def train(net, loader, optimizer, loss_dict, logger):
    for step, (x, y) in enumerate(loader):
        loss = calc_loss(loss_dict, net(x), logger, step)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main(net, loader, optimizer, loss_dict, work_dir):
    dist.init_process_group("nccl")
    net = torch.nn.parallel.DistributedDataParallel(net)
    logger = get_logger(work_dir)
    for epoch in range(10):
        train(net, loader, optimizer, loss_dict, logger)
"""


def _ufld(tmp_path: Path, guard: str) -> Path:
    files = {
        "utils/__init__.py": "",
        "utils/dist_utils.py": DIST_UTILS.replace("GUARD", guard),
        "utils/common.py": COMMON,
        "train.py": UFLD_TRAIN,
    }
    return _write(tmp_path, files)


def test_loss_written_through_a_rank0_only_writer_class_of_another_file(tmp_path: Path) -> None:
    assert found(_ufld(tmp_path, "if can_log():")) == {("rank0-only-loss-log", "train.py")}


def test_loss_written_through_a_writer_class_that_writes_on_every_rank(tmp_path: Path) -> None:
    assert found(_ufld(tmp_path, "if True:")) == set()


# --- a model class picked from a table of project classes in another module ---------------------

STEREO_NET = """
import torch.nn as nn


class PSMNet(nn.Module):
    def __init__(self, maxdisp):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 32, 3), NORM)
"""

BACKBONES_INIT = """
from backbones.psmnet import PSMNet

__models__ = {"PSMNet": PSMNet}
"""

STEREO_TRAIN = """
import torch
import torch.distributed as dist
from backbones import __models__


def main_worker(gpu, args):
    dist.init_process_group("nccl", rank=gpu, world_size=args.world_size)
    model = __models__[args.model](args.maxdisp)
    model = torch.nn.parallel.DistributedDataParallel(model.cuda(gpu), device_ids=[gpu])
"""


def _stereo(tmp_path: Path, norm: str) -> Path:
    files = {
        "backbones/__init__.py": BACKBONES_INIT,
        "backbones/psmnet.py": STEREO_NET.replace("NORM", norm),
        "train_DDP.py": STEREO_TRAIN,
    }
    return _write(tmp_path, files)


def test_model_picked_from_a_table_of_batchnorm_classes(tmp_path: Path) -> None:
    assert found(_stereo(tmp_path, "nn.BatchNorm2d(32)")) == {("batchnorm-unsynced", "train_DDP.py")}


def test_model_picked_from_a_table_of_classes_without_batchnorm(tmp_path: Path) -> None:
    assert found(_stereo(tmp_path, "nn.GroupNorm(8, 32)")) == set()


# --- a model zoo whose table names what a star import brings -------------------------------------

ZOO_FILES = {
    "encoding/__init__.py": "from . import models\n",
    "encoding/models/__init__.py": "from .model_zoo import get_model\n",
    "encoding/models/backbone/__init__.py": "from .resnet import *\n",
    "encoding/models/backbone/resnet.py": """
import torch.nn as nn


def resnet50(**kwargs):
    return nn.Sequential(nn.Conv2d(3, 64, 7), NORM)
""",
    "encoding/models/model_zoo.py": """
from .backbone import *

models = {"resnet50": resnet50}


def get_model(name, **kwargs):
    net = models[name.lower()](**kwargs)
    return net
""",
    "experiments/train_dist.py": """
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import encoding


def main_worker(gpu, args):
    dist.init_process_group("nccl", rank=gpu, world_size=args.world_size)
    model = encoding.models.get_model(args.model)
    model = DistributedDataParallel(model.cuda(gpu), device_ids=[gpu])
""",
}


def _zoo(tmp_path: Path, norm: str) -> Path:
    return _write(tmp_path, {k: v.replace("NORM", norm) for k, v in ZOO_FILES.items()})


def test_model_zoo_table_of_star_imported_batchnorm_builders(tmp_path: Path) -> None:
    assert found(_zoo(tmp_path, "nn.BatchNorm2d(64)")) == {
        ("batchnorm-unsynced", "experiments/train_dist.py")
    }


def test_model_zoo_table_of_star_imported_builders_without_batchnorm(tmp_path: Path) -> None:
    assert found(_zoo(tmp_path, "nn.GroupNorm(8, 64)")) == set()


# --- a sampler-less DataLoader returned by builders of another file ------------------------------

DATA_UTILS = """
import torch
from torch.utils.data import DataLoader, TensorDataset

DATASET_CLASS


def prepare_data(x, y, b_size):
    datasets = DATASET(x, y)
    train_dl = DataLoader(datasets, batch_size=b_size, shuffle=True)
    return train_dl


def pre_processing(path, b_size=2048):
    x, y = torch.load(path)
    train_dat = prepare_data(x[:1000], y[:1000], b_size)
    valid_dat = prepare_data(x[1000:], y[1000:], b_size)
    return train_dat, valid_dat
"""

SHARDED_DATASET = """
import torch.distributed as dist


class ShardedDataset(TensorDataset):
    def __init__(self, x, y):
        rank, world_size = dist.get_rank(), dist.get_world_size()
        super().__init__(x[rank::world_size], y[rank::world_size])
"""

CORAL_TRAIN = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from data_utils import pre_processing


def train_model(train_dat, model, n_epochs, device):
    model = DDP(model, device_ids=[device])
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(n_epochs):
        for x, y in train_dat:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


def main(rank, world_size, path):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    train_dat, valid_dat = pre_processing(path)
    train_model(train_dat, torch.nn.Linear(8, 3).cuda(rank), 50, rank)


if __name__ == "__main__":
    mp.spawn(main, args=(2, "data.pt"), nprocs=2)
"""


def _coral(tmp_path: Path, dataset_class: str = "", dataset: str = "TensorDataset") -> Path:
    data_utils = DATA_UTILS.replace("DATASET_CLASS", dataset_class).replace("DATASET(", f"{dataset}(")
    return _write(tmp_path, {"data_utils.py": data_utils, "train_ddp.py": CORAL_TRAIN})


def test_loader_without_sampler_returned_two_calls_deep_from_another_file(tmp_path: Path) -> None:
    assert found(_coral(tmp_path)) == {("sampler-missing", "train_ddp.py")}


def test_loader_over_a_dataset_class_that_shards_by_rank(tmp_path: Path) -> None:
    assert found(_coral(tmp_path, SHARDED_DATASET, "ShardedDataset")) == set()


CORAL_SINGLE = """
import torch
from data_utils import pre_processing


def main(path):
    train_dat, valid_dat = pre_processing(path)
    model = torch.nn.Linear(8, 3)
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(50):
        for x, y in train_dat:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def test_loader_from_another_file_trained_on_by_a_single_process_script(tmp_path: Path) -> None:
    root = _coral(tmp_path)
    (root / "train.py").write_text(CORAL_SINGLE)
    assert found(root) == {("sampler-missing", "train_ddp.py")}


def test_loader_from_a_builder_that_reads_in_order_is_not_reported(tmp_path: Path) -> None:
    root = _coral(tmp_path)
    text = (root / "data_utils.py").read_text().replace("shuffle=True", "shuffle=False")
    (root / "data_utils.py").write_text(text)
    assert found(root) == set()


def test_loader_from_a_builder_handed_the_rank_is_not_reported(tmp_path: Path) -> None:
    root = _coral(tmp_path)
    text = (root / "train_ddp.py").read_text().replace("pre_processing(path)", "pre_processing(path, rank)")
    (root / "train_ddp.py").write_text(text)
    assert found(root) == set()


def test_loader_from_a_builder_in_the_single_process_branch_is_not_reported(tmp_path: Path) -> None:
    root = _coral(tmp_path)
    text = (
        (root / "train_ddp.py")
        .read_text()
        .replace(
            "    train_dat, valid_dat = pre_processing(path)\n",
            "    if world_size == 1:\n        train_dat, valid_dat = pre_processing(path)\n    else:\n        train_dat = None\n",
        )
    )
    (root / "train_ddp.py").write_text(text)
    assert found(root) == set()


# --- a trainer class built with the callable that builds its model -------------------------------

DDP_TRAINER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class DDPTrainer:
    def __init__(self, model_fn, train_dataset, config):
        self.model_fn = model_fn
        self.train_dataset = train_dataset
        self.config = config

    def _train_worker(self, rank, world_size):
        dist.init_process_group("nccl", rank=rank, world_size=world_size)
        model = self.model_fn()
        model = model.to(rank)
        model = DDP(model, device_ids=[rank])
        return model
"""

PERSON_CLASSIFIER = """
import torch.nn as nn
from train_utils.ddp_trainer import DDPTrainer


class PersonClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Sequential(nn.Linear(2048, 512), NORM)


def create_model():
    return PersonClassifier()


def main(dataset, config):
    trainer = DDPTrainer(model_fn=create_model, train_dataset=dataset, config=config)
"""


def _handed_callable(tmp_path: Path, norm: str) -> Path:
    files = {
        "train_utils/__init__.py": "",
        "train_utils/ddp_trainer.py": DDP_TRAINER,
        "train_all_models/person_classifier.py": PERSON_CLASSIFIER.replace("NORM", norm),
    }
    return _write(tmp_path, files)


def test_trainer_class_wraps_what_the_handed_callable_builds(tmp_path: Path) -> None:
    root = _handed_callable(tmp_path, "nn.BatchNorm1d(512)")
    assert found(root) == {("batchnorm-unsynced", "train_utils/ddp_trainer.py")}


def test_trainer_class_wraps_a_handed_callable_without_batchnorm(tmp_path: Path) -> None:
    assert found(_handed_callable(tmp_path, "nn.LayerNorm(512)")) == set()


# --- a private model class (``_VGG``) whose layers a helper of its module builds ------------------

VGG_MODULE = """
import torch.nn as nn


def _make_layers(cfg):
    layers = []
    for width in cfg:
        layers += [nn.Conv2d(3, width, 3), NORM, nn.ReLU(inplace=True)]
    return nn.Sequential(*layers)


class _VGG(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = _make_layers(cfg)


def VGG11():
    return _VGG([64, 128])
"""

VGG_MAIN = """
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import model as mdl


def main(rank):
    dist.init_process_group("gloo", rank=rank, world_size=4)
    model = mdl.VGG11()
    model = DDP(model)
"""


def test_private_model_class_built_by_a_helper_of_its_module(tmp_path: Path) -> None:
    root = _write(
        tmp_path, {"model.py": VGG_MODULE.replace("NORM", "nn.BatchNorm2d(width)"), "part3_main.py": VGG_MAIN}
    )
    assert found(root) == {("batchnorm-unsynced", "part3_main.py")}


def test_private_model_class_without_batchnorm(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {"model.py": VGG_MODULE.replace("NORM", "nn.GroupNorm(8, width)"), "part3_main.py": VGG_MAIN},
    )
    assert found(root) == set()
