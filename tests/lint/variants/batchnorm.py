HEAD = """
import os
import torch
import torch.nn as nn
import torch.distributed as dist
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP
"""
NET = """
class Net(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.bn = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.fc(self.bn(self.conv(x)).mean((2, 3)))
"""


def main(build, wrap="model = DDP(model, device_ids=[local_rank])"):
    return f"""
def main(args, loader):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    {build}
    model = model.cuda(local_rank)
    {wrap}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
"""


R = "batchnorm-unsynced"
C = {}
C["canon"] = (R, True, {"train.py": HEAD + NET + main("model = Net()")}, "train.py")
C["other_file"] = (
    R,
    True,
    {"train.py": HEAD + "from models import Net\n" + main("model = Net()"), "models.py": HEAD + NET},
    "train.py",
)
C["package"] = (
    R,
    True,
    {
        "train.py": HEAD + "from models.net import Net\n" + main("model = Net()"),
        "models/__init__.py": "",
        "models/net.py": HEAD + NET,
    },
    "train.py",
)
C["pkg_reexport"] = (
    R,
    True,
    {
        "train.py": HEAD + "from models import Net\n" + main("model = Net()"),
        "models/__init__.py": "from .net import Net\n",
        "models/net.py": HEAD + NET,
    },
    "train.py",
)
C["tv_resnet"] = (R, True, {"train.py": HEAD + main("model = torchvision.models.resnet50()")}, "train.py")
C["tv_from_import"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from torchvision.models import resnet18\n"
        + main("model = resnet18(num_classes=10)")
    },
    "train.py",
)
C["tv_by_name"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "import torchvision.models as models\n"
        + main("model = models.__dict__[args.arch]()")
    },
    "train.py",
)
C["builder_fn"] = (
    R,
    True,
    {
        "train.py": HEAD + "from models import build_model\n" + main("model = build_model(args)"),
        "models.py": HEAD
        + NET
        + """
def build_model(cfg):
    return Net(num_classes=10)
""",
    },
    "train.py",
)
C["self_model"] = (
    R,
    True,
    {
        "train.py": HEAD
        + NET
        + """
class Trainer:
    def __init__(self, args):
        dist.init_process_group("nccl")
        local_rank = int(os.environ["LOCAL_RANK"])
        self.model = Net().cuda(local_rank)
        self.model = DDP(self.model, device_ids=[local_rank])
"""
    },
    "train.py",
)
C["sequential"] = (
    R,
    True,
    {
        "train.py": HEAD
        + main(
            "model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10))"
        )
    },
    "train.py",
)
C["wrap_kw"] = (
    R,
    True,
    {
        "train.py": HEAD
        + NET
        + main(
            "model = Net()",
            "model = torch.nn.parallel.DistributedDataParallel(module=model, device_ids=[local_rank], output_device=local_rank)",
        )
    },
    "train.py",
)
C["bn1d_mlp"] = (
    R,
    True,
    {
        "train.py": HEAD
        + """
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    def forward(self, x):
        return self.net(x)
"""
        + main("model = MLP()")
    },
    "train.py",
)
C["NEG_syncbn"] = (
    R,
    False,
    {"train.py": HEAD + NET + main("model = nn.SyncBatchNorm.convert_sync_batchnorm(Net())")},
    "train.py",
)
C["NEG_syncbn_after"] = (
    R,
    False,
    {
        "train.py": HEAD
        + NET
        + main(
            "model = Net()\n    if args.distributed:\n        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)"
        )
    },
    "train.py",
)
C["NEG_layernorm"] = (
    R,
    False,
    {"train.py": HEAD + main("model = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8))")},
    "train.py",
)
C["NEG_vit"] = (R, False, {"train.py": HEAD + main("model = torchvision.models.vit_b_16()")}, "train.py")
C["inplace_abn"] = (
    R,
    True,
    {
        "train.py": HEAD + "from models import TResNet\n" + main("model = TResNet()"),
        "models.py": HEAD
        + """
from inplace_abn import InPlaceABN


class TResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.abn = InPlaceABN(num_features=8, activation="leaky_relu")

    def forward(self, x):
        return self.abn(self.conv(x))
""",
    },
    "train.py",
)
C["NEG_inplace_abn_sync"] = (
    R,
    False,
    {
        "train.py": HEAD
        + "from inplace_abn import InPlaceABNSync\n"
        + main("model = nn.Sequential(nn.Conv2d(3, 8, 3), InPlaceABNSync(8))"),
    },
    "train.py",
)
# the layer type handed over as a parameter's default (torchvision's ``norm_layer=nn.BatchNorm2d``), or
# through ``functools.partial``, in the wrapping file itself as in another file
NET_NORM_PARAM = NET.replace(
    "def __init__(self, num_classes=10):", "def __init__(self, num_classes=10, norm_layer=nn.BatchNorm2d):"
).replace("self.bn = nn.BatchNorm2d(16)", "self.bn = norm_layer(16)")
C["norm_layer_default"] = (R, True, {"train.py": HEAD + NET_NORM_PARAM + main("model = Net()")}, "train.py")
C["norm_layer_default_other_file"] = (
    R,
    True,
    {
        "train.py": HEAD + "from models import Net\n" + main("model = Net()"),
        "models.py": HEAD + NET_NORM_PARAM,
    },
    "train.py",
)
C["norm_layer_partial"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from functools import partial\n"
        + NET.replace("self.bn = nn.BatchNorm2d(16)", "self.bn = partial(nn.BatchNorm2d, eps=1e-3)(16)")
        + main("model = Net()")
    },
    "train.py",
)
C["NEG_batchnorm_only_inspected"] = (
    R,
    False,
    {
        "train.py": HEAD
        + NET.replace("self.bn = nn.BatchNorm2d(16)", "self.bn = nn.GroupNorm(4, 16)")
        + """
def freeze_bn(module):
    for m in module.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)) or type(m) is nn.BatchNorm3d:
            m.eval()
"""
        + main("model = Net()\n    freeze_bn(model)")
    },
    "train.py",
)
C["torch_hub_torchvision"] = (
    R,
    True,
    {
        "train.py": HEAD
        + main("model = torch.hub.load('pytorch/vision:v0.10.0', 'resnet50', pretrained=True)")
    },
    "train.py",
)
C["NEG_torch_hub_vit"] = (
    R,
    False,
    {"train.py": HEAD + main("model = torch.hub.load('pytorch/vision', 'vit_b_16')")},
    "train.py",
)
C["torchvision_video"] = (
    R,
    True,
    {"train.py": HEAD + main("model = torchvision.models.video.r3d_18()")},
    "train.py",
)
MONAI = "from monai.networks.nets import UNet\nfrom monai.networks.layers import Norm\n"
C["monai_batch_norm"] = (
    R,
    True,
    {
        "train.py": HEAD
        + MONAI
        + main(
            "model = UNet(spatial_dims=3, in_channels=1, out_channels=2, channels=(16, 32), strides=(2,), norm=Norm.BATCH)"
        )
    },
    "train.py",
)
C["NEG_monai_default_norm"] = (
    R,
    False,
    {
        "train.py": HEAD
        + MONAI
        + main("model = UNet(spatial_dims=3, in_channels=1, out_channels=2, channels=(16, 32), strides=(2,))")
    },
    "train.py",
)

# Round 22: a conversion the parser turns on by default but the shipped launch script turns off
# (RetinaFace's ``train_ddp_lanch.sh --syncbn=0``); one off by default stays a (config-gated) finding
# even where every shipped launch script turns it on: the run without the flag is unsynced.
SYNCBN_OPTION = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--syncbn", type=int, default={default})
"""
CONVERT_BY_OPTION = (
    "model = Net()\n    if args.syncbn:\n        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)"
)


def by_option(default, scripts):
    return {
        "train.py": HEAD + SYNCBN_OPTION.format(default=default) + NET + main(CONVERT_BY_OPTION),
        **scripts,
    }


C["launch_script_turns_conversion_off"] = (
    R,
    True,
    by_option(
        1,
        {
            "train_ddp.sh": "python -m torch.distributed.launch --nproc_per_node=4 train.py --syncbn=0 --lr=0.1\n"
        },
    ),
    "train.py",
)
C["NEG_launch_script_keeps_conversion"] = (
    R,
    False,
    by_option(
        1, {"train_ddp.sh": "python -m torch.distributed.launch --nproc_per_node=4 train.py --syncbn 1\n"}
    ),
    "train.py",
)
C["launch_scripts_turn_conversion_on_default_off"] = (
    R,
    True,
    by_option(
        0,
        {
            "scripts/a.sh": "torchrun --nproc_per_node=8 train.py --syncbn 1 --epochs 100\n",
            "scripts/b.sh": "torchrun --nproc_per_node=8 \\\n  train.py --epochs 300 \\\n  --syncbn=1\n",
        },
    ),
    "train.py",
)
C["launch_script_one_of_two_off"] = (
    R,
    True,
    by_option(
        0,
        {
            "scripts/a.sh": "torchrun --nproc_per_node=8 train.py --syncbn 1\n",
            "scripts/b.sh": "torchrun --nproc_per_node=8 train.py --syncbn 0\n",
        },
    ),
    "train.py",
)
C["NEG_launch_script_variable"] = (
    R,
    False,
    by_option(1, {"train_ddp.sh": "SYNC=1\npython -m torch.distributed.launch train.py --syncbn=$SYNC\n"}),
    "train.py",
)

# Round 22: a timm model named by the shipped YAML configuration, read through a local
# (NAIRR's ``model_name = params['model_name']``, ``model_name: 'resnet101.a1_in1k'``).
TIMM_BY_CONFIG = (
    HEAD
    + "import timm\nimport yaml\n"
    + main(
        "params = yaml.safe_load(open(args.config))\n    model_name = params['model_name']\n"
        "    model = timm.create_model(model_name, pretrained=False)"
    )
)
C["timm_model_named_by_shipped_yaml"] = (
    R,
    True,
    {"train.py": TIMM_BY_CONFIG, "config/train.yaml": "model_name: 'resnet101.a1_in1k'\nlr: 0.1\n"},
    "train.py",
)
C["NEG_timm_model_named_by_shipped_yaml_vit"] = (
    R,
    False,
    {"train.py": TIMM_BY_CONFIG, "config/train.yaml": "model_name: vit_base_patch16_224\nlr: 0.1\n"},
    "train.py",
)
C["NEG_timm_model_named_by_yamls_that_disagree"] = (
    R,
    False,
    {
        "train.py": TIMM_BY_CONFIG,
        "config/a.yaml": "model_name: resnet50\n",
        "config/b.yaml": "model_name: vit_small_patch16_224\n",
    },
    "train.py",
)

# Round 22: the wrap is a project subclass of DDP brought by a star import (filter_pruning_taylor's
# ``from utils.dist import *`` then ``DDP(model, device_ids=[...])``).
DDP_SUBCLASS = """
import torch
from torch.nn.parallel import DistributedDataParallel


class DDP(DistributedDataParallel):
    def forward(self, *args, **kwargs):
        if self.training:
            return super().forward(*args, **kwargs)
        return self.module(*args, **kwargs)
"""
STAR_HEAD = HEAD.replace(
    "from torch.nn.parallel import DistributedDataParallel as DDP\n", "from utils.dist import *\n"
)
C["ddp_subclass_by_star_import"] = (
    R,
    True,
    {
        "train.py": STAR_HEAD + NET + main("model = Net()"),
        "utils/__init__.py": "",
        "utils/dist.py": DDP_SUBCLASS,
    },
    "train.py",
)
C["NEG_ddp_subclass_by_star_import_synced"] = (
    R,
    False,
    {
        "train.py": STAR_HEAD + NET + main("model = nn.SyncBatchNorm.convert_sync_batchnorm(Net())"),
        "utils/__init__.py": "",
        "utils/dist.py": DDP_SUBCLASS,
    },
    "train.py",
)
C["NEG_star_imported_class_not_a_wrapper"] = (
    R,
    False,
    {
        "train.py": STAR_HEAD + NET + main("model = Net()"),
        "utils/__init__.py": "",
        "utils/dist.py": "class DDP:\n    def __init__(self, module, device_ids=None):\n        self.module = module\n",
    },
    "train.py",
)

# Round 22: ignite's ``idist.auto_model(model)`` is the DDP wrap when the run is distributed; it converts
# BatchNorm only when asked (``sync_bn=True``).
IGNITE_HEAD = HEAD + "import ignite.distributed as idist\n"
C["ignite_auto_model"] = (
    R,
    True,
    {"train.py": IGNITE_HEAD + NET + main("model = Net()", wrap="model = idist.auto_model(model)")},
    "train.py",
)
C["NEG_ignite_auto_model_sync_bn"] = (
    R,
    False,
    {
        "train.py": IGNITE_HEAD
        + NET
        + main("model = Net()", wrap="model = idist.auto_model(model, sync_bn=True)")
    },
    "train.py",
)
C["NEG_launch_script_picks_the_other_conversion"] = (
    R,
    False,
    {
        "train.py": HEAD
        + '\nimport argparse\nparser = argparse.ArgumentParser()\nparser.add_argument("--sync_bn", type=str, default="pytorch")\n'
        + NET
        + main(
            'model = Net()\n    if args.sync_bn == "pytorch":\n        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)\n'
            '    elif args.sync_bn == "apex":\n        model = apex.parallel.convert_syncbn_model(model)'
        ),
        "scripts/train.sh": "python -m torch.distributed.launch main.py --sync_bn apex --epochs 100\n",
    },
    "train.py",
)

# Round 23: a trainer that puts every BatchNorm layer in eval mode each epoch (EfficientDet's
# ``model.module.freeze_bn()`` after ``model.train()``) uses running statistics only; the same
# method called only before ``model.train()`` undoes nothing.
FREEZE_NET = NET.replace(
    "    def forward(self, x):",
    "    def freeze_bn(self):\n        for layer in self.modules():\n            if isinstance(layer, nn.BatchNorm2d):\n"
    "                layer.eval()\n\n    def forward(self, x):",
)


def freeze_main(before, after):
    return f"""
def train(model, loader, opt):
    {before}
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def main(args, loader):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = Net().cuda(local_rank)
    model = DDP(model, device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        {after}
        train(model, loader, opt)
"""


C["NEG_freeze_bn_each_epoch"] = (
    R,
    False,
    {
        "train.py": HEAD
        + "from models import Net\n"
        + freeze_main("model.train()\n    model.module.freeze_bn()", "pass"),
        "models.py": HEAD + FREEZE_NET,
    },
    "train.py",
)
C["freeze_bn_then_train"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from models import Net\n"
        + freeze_main("model.module.freeze_bn()\n    model.train()", "pass"),
        "models.py": HEAD + FREEZE_NET,
    },
    "train.py",
)
C["freeze_bn_behind_flag"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from models import Net\n"
        + freeze_main("model.train()\n    if model.module.frozen:\n        model.module.freeze_bn()", "pass"),
        "models.py": HEAD + FREEZE_NET,
    },
    "train.py",
)

# Round 23: a model handed through two trainer functions before the wrap (UFDN-Reid's
# ``do_train_config(cfg, model, ...)`` in a star-imported package calling ``do_train_pd(cfg, model, ...)``,
# which wraps its ``model``): what the outer caller built decides.
HANDED_TRAIN = """
def do_train(model, loader, local_rank):
    model = DDP(model, device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
HANDED_DISPATCH = "from .loop import do_train\n\n\ndef do_train_config(cfg, model, loader, local_rank):\n    do_train(model, loader, local_rank)\n"


def handed_entry(build, imports="from trainer import *\n"):
    return (
        HEAD
        + "from models import Net, Mlp\n"
        + imports
        + f"""
def main(cfg, loader):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = {build}
    do_train_config(cfg, model, loader, local_rank)
"""
    )


MLP = "\nclass Mlp(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n"
C["handed_through_two_defs"] = (
    R,
    True,
    {
        "tools/train.py": handed_entry("Net()"),
        "tools/trainer/__init__.py": HANDED_DISPATCH,
        "tools/trainer/loop.py": HEAD + HANDED_TRAIN,
        "tools/models.py": HEAD + NET + MLP,
    },
    "tools/trainer/loop.py",
)
C["NEG_handed_through_two_defs_no_bn"] = (
    R,
    False,
    {
        "tools/train.py": handed_entry("Mlp()"),
        "tools/trainer/__init__.py": HANDED_DISPATCH,
        "tools/trainer/loop.py": HEAD + HANDED_TRAIN,
        "tools/models.py": HEAD + NET + MLP,
    },
    "tools/trainer/loop.py",
)
C["handed_through_two_defs_imported"] = (
    R,
    True,
    {
        "tools/train.py": handed_entry("Net()", "from trainer import do_train_config\n"),
        "tools/trainer/__init__.py": HANDED_DISPATCH,
        "tools/trainer/loop.py": HEAD + HANDED_TRAIN,
        "tools/models.py": HEAD + NET + MLP,
    },
    "tools/trainer/loop.py",
)

# Round 23: a trainer class handed the built model, kept as ``self.model`` in ``__init__`` and wrapped
# there as ``self.model = DDP(self.model)``, reached through a subclass's ``super().__init__(cfg,
# model)`` (DBNet.pytorch's ``Trainer(BaseTrainer)``): what the construction hands decides.
TRAINER_BASE = """
class BaseTrainer:
    def __init__(self, cfg, model, local_rank):
        self.cfg = cfg
        self.model = model.cuda(local_rank)
        self.model = DDP(self.model, device_ids=[local_rank])
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train(self, loader):
        for x, y in loader:
            loss = nn.functional.cross_entropy(self.model(x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
"""
TRAINER_SUB = (
    "from base.base_trainer import BaseTrainer\n\n\nclass Trainer(BaseTrainer):\n"
    "    def __init__(self, cfg, model, local_rank, loader):\n"
    "        super(Trainer, self).__init__(cfg, model, local_rank)\n        self.loader = loader\n"
)


def trainer_entry(build):
    return (
        HEAD
        + "from models import Net, Mlp\nfrom trainer.trainer import Trainer\n"
        + f"""
def main(cfg, loader):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = {build}
    trainer = Trainer(cfg=cfg, model=model, local_rank=local_rank, loader=loader)
    trainer.train(loader)
"""
    )


C["handed_to_trainer_class"] = (
    R,
    True,
    {
        "tools/train.py": trainer_entry("Net()"),
        "trainer/trainer.py": TRAINER_SUB,
        "base/base_trainer.py": HEAD + TRAINER_BASE,
        "models.py": HEAD + NET + MLP,
    },
    "base/base_trainer.py",
)
C["NEG_handed_to_trainer_class_no_bn"] = (
    R,
    False,
    {
        "tools/train.py": trainer_entry("Mlp()"),
        "trainer/trainer.py": TRAINER_SUB,
        "base/base_trainer.py": HEAD + TRAINER_BASE,
        "models.py": HEAD + NET + MLP,
    },
    "base/base_trainer.py",
)
# near miss: the class builds its own model over the handed one (``self.model = Mlp()``)
C["NEG_trainer_class_rebuilds_model"] = (
    R,
    False,
    {
        "tools/train.py": trainer_entry("Net()"),
        "trainer/trainer.py": TRAINER_SUB,
        "base/base_trainer.py": HEAD
        + "from models import Mlp\n"
        + TRAINER_BASE.replace("self.model = model.cuda(local_rank)", "self.model = Mlp().cuda(local_rank)"),
        "models.py": HEAD + NET + MLP,
    },
    "base/base_trainer.py",
)

# Round 23: the model class picked by a configured name from a project module handed to a helper
# that returns ``getattr(module, config[name]['type'])(...)`` (deeplabv3plus_DPDDP's same-file
# ``get_instance(models, 'arch', config, n)``; pytorch-template's ``config.init_obj('arch', module_arch)``
# in another file). The NEG: the handed module's models use LayerNorm only.
LN_NET = NET.replace("nn.BatchNorm2d(16)", "nn.GroupNorm(4, 16)")
GET_INSTANCE = """
import models


def get_instance(module, name, config, *args):
    return getattr(module, config[name]['type'])(*args, **config[name]['args'])
"""
C["picked_from_a_handed_module"] = (
    R,
    True,
    {
        "train.py": HEAD + GET_INSTANCE + main("model = get_instance(models, 'arch', args.config, 10)"),
        "models/__init__.py": "from .net import Net\n",
        "models/net.py": HEAD + NET,
    },
    "train.py",
)
C["NEG_picked_from_a_handed_module_no_bn"] = (
    R,
    False,
    {
        "train.py": HEAD + GET_INSTANCE + main("model = get_instance(models, 'arch', args.config, 10)"),
        "models/__init__.py": "from .net import Net\n",
        "models/net.py": HEAD + LN_NET,
    },
    "train.py",
)
CONFIG_PARSER = """
import logging


class ConfigParser:
    def __init__(self, config):
        self.config = config

    def init_obj(self, name, module, *args, **kwargs):
        module_name = self.config[name]['type']
        module_args = dict(self.config[name]['args'])
        module_args.update(kwargs)
        return getattr(module, module_name)(*args, **module_args)

    def get_logger(self, name):
        return logging.getLogger(name)
"""
C["picked_by_a_config_method_of_another_file"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "import model.model as module_arch\nfrom parse_config import ConfigParser\n"
        + main("config = ConfigParser(args.config)\n    model = config.init_obj('arch', module_arch)"),
        "parse_config.py": CONFIG_PARSER,
        "model/__init__.py": "",
        "model/model.py": HEAD + NET,
    },
    "train.py",
)
C["NEG_picked_by_a_config_method_no_bn"] = (
    R,
    False,
    {
        "train.py": HEAD
        + "import model.model as module_arch\nfrom parse_config import ConfigParser\n"
        + main("config = ConfigParser(args.config)\n    model = config.init_obj('arch', module_arch)"),
        "parse_config.py": CONFIG_PARSER,
        "model/__init__.py": "",
        "model/model.py": HEAD + LN_NET,
    },
    "train.py",
)

# Round 23: BatchNorm behind a helper's parameter that defaults to off, tested as ``if batch_norm ==
# True:``, the helper imported from another module and called (Enigmatisms NeRF's ``makeMLP(c_in,
# c_out, act=ReLU(), batch_norm=False)`` spread into ``nn.Sequential`` by the model's ``__init__``).
MAKE_MLP = (
    HEAD
    + """

def make_mlp(in_chan, out_chan, act=nn.ReLU(), batch_norm=False):
    modules = [nn.Linear(in_chan, out_chan)]
    if batch_norm == True:
        modules.append(nn.BatchNorm1d(out_chan))
    if act is not None:
        modules.append(act)
    return modules
"""
)
MLP_NET = (
    HEAD
    + """
from nets.helper import make_mlp


class Net(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.layers = nn.Sequential(*make_mlp(3, width{more}), *make_mlp(width, 1, None))

    def forward(self, x):
        return self.layers(x)
"""
)
C["switch_spelled_eq_true_turned_on"] = (
    R,
    True,
    {
        "train.py": HEAD + "from nets.model import Net\n" + main("model = Net()"),
        "nets/__init__.py": "",
        "nets/helper.py": MAKE_MLP,
        "nets/model.py": MLP_NET.format(more=", batch_norm=True"),
    },
    "train.py",
)
C["NEG_switch_spelled_eq_true_left_off"] = (
    R,
    False,
    {
        "train.py": HEAD + "from nets.model import Net\n" + main("model = Net()"),
        "nets/__init__.py": "",
        "nets/helper.py": MAKE_MLP,
        "nets/model.py": MLP_NET.format(more=""),
    },
    "train.py",
)

# Round 23: a builder of a written name from a module named wholly by configuration
# (OpenChemFold's ``Net = importlib.import_module(cfg.model).Net``): the candidates are the project's
# defs so named; the NEG's are all GroupNorm models.
IMPORTED_NET = "import importlib\n" + main(
    "Net = importlib.import_module(args.model).Net\n    model = Net(10)"
)
C["builder_from_a_configured_module"] = (
    R,
    True,
    {
        "train.py": HEAD + IMPORTED_NET,
        "models/__init__.py": "",
        "models/mdl_1.py": HEAD + NET,
        "models/mdl_2.py": HEAD + NET,
    },
    "train.py",
)
C["NEG_builder_from_a_configured_module_no_bn"] = (
    R,
    False,
    {
        "train.py": HEAD + IMPORTED_NET,
        "models/__init__.py": "",
        "models/mdl_1.py": HEAD + LN_NET,
        "models/mdl_2.py": HEAD + LN_NET,
    },
    "train.py",
)

# Round 23 (regression the older corpus showed): a freeze that spares the first BatchNorm layer, or that
# runs only under a condition of its own (TDN's partial BN: ``if self._enable_pbn and mode:`` ... ``if
# count >= 2: m.eval()``), leaves layers training on local statistics.
PARTIAL_FREEZE_NET = NET.replace(
    "    def forward(self, x):",
    "    def freeze_bn(self):\n        count = 0\n        for layer in self.modules():\n"
    "            if isinstance(layer, nn.BatchNorm2d):\n                count += 1\n"
    "                if count >= 2:\n                    layer.eval()\n\n    def forward(self, x):",
)
C["partial_freeze_spares_the_first_layer"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from models import Net\n"
        + freeze_main("model.train()\n    model.module.freeze_bn()", "pass"),
        "models.py": HEAD + PARTIAL_FREEZE_NET,
    },
    "train.py",
)

# Round 24: an OpenMMLab-style backbone copied into the project (TNN-MO's mmcv ``ResNet``): its norm
# layers come from ``build_norm_layer(self.norm_cfg, c)`` / ``ConvModule(..., norm_cfg=norm_cfg)``
# with the constructor's ``norm_cfg=dict(type='BN')`` default, i.e. ``nn.BatchNorm2d``. The NEG's
# default is ``dict(type='GN', num_groups=8)``.
MM_BACKBONE = """
import copy
import torch.nn as nn
from mmcv.cnn import ConvModule, build_norm_layer


class Block(nn.Module):
    def __init__(self, c, norm_cfg={cfg}):
        super().__init__()
        self.conv = ConvModule(c, c, 3, padding=1, norm_cfg=norm_cfg)

    def forward(self, x):
        return x + self.conv(x)


class Backbone(nn.Module):
    def __init__(self, c=64, norm_cfg={cfg}):
        super().__init__()
        norm_cfg = copy.deepcopy(norm_cfg)
        self.norm_cfg = norm_cfg
        self.stem = nn.Conv2d(3, c, 7, stride=2)
        self.norm_name, norm = build_norm_layer(self.norm_cfg, c, postfix=1)
        self.add_module(self.norm_name, norm)
        self.block = Block(c)

    def forward(self, x):
        return self.block(getattr(self, self.norm_name)(self.stem(x)))
"""
MM_MAIN = HEAD + "from models.backbone import Backbone\n" + main("model = Backbone()")
C["mmcv_norm_cfg_default_bn"] = (
    R,
    True,
    {
        "train.py": MM_MAIN,
        "models/__init__.py": "",
        "models/backbone.py": MM_BACKBONE.replace("{cfg}", "dict(type='BN', requires_grad=True)"),
    },
    "train.py",
)
C["NEG_mmcv_norm_cfg_default_gn"] = (
    R,
    False,
    {
        "train.py": MM_MAIN,
        "models/__init__.py": "",
        "models/backbone.py": MM_BACKBONE.replace("{cfg}", "dict(type='GN', num_groups=8)"),
    },
    "train.py",
)

# Round 24: a model module that star-imports its blocks (RNN-T-ASR's ``models.py``: ``from encoders
# import *`` then ``ConformerEncoder(...)``): the name is the star-imported module's class. The NEG's
# blocks use LayerNorm.
STAR_MODEL = """
import torch.nn as nn
from blocks import *


class Model(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.enc = Encoder(dim)
        self.fc = nn.Linear(dim, 10)

    def forward(self, x):
        return self.fc(self.enc(x))
"""
STAR_BLOCKS = """
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.{norm}(dim)

    def forward(self, x):
        return self.norm(self.proj(x))
"""
STAR_MAIN = HEAD + "from models import Model\n" + main("model = Model()")
C["star_imported_block"] = (
    R,
    True,
    {
        "train.py": STAR_MAIN,
        "models.py": STAR_MODEL,
        "blocks.py": STAR_BLOCKS.replace("{norm}", "BatchNorm1d"),
    },
    "train.py",
)
C["NEG_star_imported_block_layernorm"] = (
    R,
    False,
    {"train.py": STAR_MAIN, "models.py": STAR_MODEL, "blocks.py": STAR_BLOCKS.replace("{norm}", "LayerNorm")},
    "train.py",
)

# Round 24: a Conformer from lucidrains' ``conformer`` package (or torchaudio's): its convolution module
# holds BatchNorm1d, unless built causal (then Identity).
CONFORMER_NET = """
import torch.nn as nn
from conformer import ConformerBlock


class Encoder(nn.Module):
    def __init__(self, dim=144):
        super().__init__()
        self.block = ConformerBlock(dim=dim, dim_head=36, heads=4, conv_kernel_size=31{extra})

    def forward(self, x):
        return self.block(x)
"""
CONFORMER_MAIN = HEAD + "from encoder import Encoder\n" + main("model = Encoder()")
C["conformer_library_block"] = (
    R,
    True,
    {"train.py": CONFORMER_MAIN, "encoder.py": CONFORMER_NET.replace("{extra}", "")},
    "train.py",
)
C["NEG_conformer_library_block_causal"] = (
    R,
    False,
    {"train.py": CONFORMER_MAIN, "encoder.py": CONFORMER_NET.replace("{extra}", ", causal=True")},
    "train.py",
)

# Round 24 (fixer 2): a factory returning a def of a project module picked by a run-time name
# (wespeaker's ``get_speaker_model(name)``: ``return getattr(resnet, name)``), called by the trainer
# (``get_model(args.model)(**kw)``): what the modules' defs build.
PICK_FACTORY = """
from models import resnet, tdnn


def get_model(name):
    if name.startswith("ResNet"):
        return getattr(resnet, name)
    return getattr(tdnn, name)
"""
PICK_MODELS = """
import torch.nn as nn


class {cls}(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.fc = nn.Linear(16, num_classes)
        self.norm = nn.{norm}(num_classes)

    def forward(self, x):
        return self.norm(self.fc(x))
"""
PICK_MAIN = (
    HEAD + "from models.factory import get_model\n" + main("model = get_model(args.model)(num_classes=10)")
)


def _pick_files(norm: str) -> dict[str, str]:
    return {
        "train.py": PICK_MAIN,
        "models/__init__.py": "",
        "models/factory.py": PICK_FACTORY,
        "models/resnet.py": PICK_MODELS.replace("{cls}", "ResNet34").replace("{norm}", norm),
        "models/tdnn.py": PICK_MODELS.replace("{cls}", "XVEC").replace("{norm}", norm),
    }


C["module_pick_factory"] = (R, True, _pick_files("BatchNorm1d"), "train.py")
C["NEG_module_pick_factory_layernorm"] = (R, False, _pick_files("LayerNorm"), "train.py")

# Round 24 (fixer 2): a model class handed over by name, built elsewhere (kl-nn's ``def
# train_nn(rank, world_size, Model=ForkCNN)`` handing ``Model`` to the helper that runs ``Model(mode)``).
HANDED_NET = """
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.norm = nn.{norm}(16)

    def forward(self, x):
        return self.norm(self.fc(x))
"""
HANDED_MAIN = (
    HEAD
    + """from models import Net


def build(Model):
    model = Model()
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def train(rank, world_size, loader, Model=Net):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model, opt = build(Model)
    model = DDP(model.cuda(rank), device_ids=[rank])
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
)
C["handed_class_default"] = (
    R,
    True,
    {"train.py": HANDED_MAIN, "models.py": HANDED_NET.replace("{norm}", "BatchNorm1d")},
    "train.py",
)
C["NEG_handed_class_default_layernorm"] = (
    R,
    False,
    {"train.py": HANDED_MAIN, "models.py": HANDED_NET.replace("{norm}", "LayerNorm")},
    "train.py",
)
# ... and a wrap under a test of a parameter no call passes, false at its default (kl-nn's
# ``load_model(..., GPUs=1)``: ``if GPUs > 1: model = DDP(model)``) never runs.
DEFAULT_OFF_WRAP = (
    HEAD
    + """from models import Net


def load_model(path, gpus=1):
    model = Net()
    if gpus > 1:
        model = DDP(model)
    model.load_state_dict(torch.load(path))
    return model


def main(args, loader):
    model = load_model({call})
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
)
C["wrap_under_passed_parameter"] = (
    R,
    True,
    {
        "train.py": DEFAULT_OFF_WRAP.replace("{call}", "args.ckpt, gpus=args.gpus"),
        "models.py": HANDED_NET.replace("{norm}", "BatchNorm1d"),
    },
    "train.py",
)
C["NEG_wrap_under_parameter_left_at_default"] = (
    R,
    False,
    {
        "train.py": DEFAULT_OFF_WRAP.replace("{call}", "args.ckpt"),
        "models.py": HANDED_NET.replace("{norm}", "BatchNorm1d"),
    },
    "train.py",
)
# ... not a default only inspected: a BatchNorm class searched for in a LayerNorm model
INSPECTED_DEFAULT = (
    HEAD
    + """from models import Net
from encoder import Encoder


def count(model, kind=Net):
    return sum(isinstance(m, kind) for m in model.modules())


"""
    + main("model = Encoder()\n    print(count(model))")
)
C["NEG_inspected_class_default"] = (
    R,
    False,
    {
        "train.py": INSPECTED_DEFAULT,
        "models.py": HANDED_NET.replace("{norm}", "BatchNorm1d"),
        "encoder.py": HANDED_NET.replace("{norm}", "LayerNorm").replace("class Net", "class Encoder"),
    },
    "train.py",
)
# Round 25: an entry script whose training runs in a method of a project object it builds
# (AlphaZeroFromScratch: ``alphaZero = AlphaZeroParallel(ddp_model, optimizer)`` then
# ``alphaZero.learn()``): it trains, so it is no evaluation script
LEARNER = """import torch


class Learner:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt

    def {method}(self, batches):
        for x, y in batches:
            {body}
"""
BACKPROP = "loss = torch.nn.functional.cross_entropy(self.model(x), y)\n            loss.backward()"
LEARNER_ENTRY = (
    HEAD
    + NET
    + """from learner import Learner


def work(rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model = Net().cuda(rank)
    ddp_model = DDP(model, device_ids=[rank])
    opt = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
    agent = Learner(ddp_model, opt)
    agent.{method}([])


if __name__ == "__main__":
    torch.multiprocessing.spawn(work, args=(2,), nprocs=2)
"""
)


def _learner(method, body):
    return {
        "train.py": LEARNER_ENTRY.replace("{method}", method),
        "learner.py": LEARNER.replace("{method}", method).replace("{body}", body),
    }


C["rl_learn_method"] = (R, True, _learner("learn", "self.opt.zero_grad()"), "train.py")
C["object_method_backprops"] = (R, True, _learner("go", BACKPROP), "train.py")
C["NEG_object_method_only_evaluates"] = (
    R,
    False,
    _learner("go", "print(self.model(x).argmax(1).eq(y).float().mean())"),
    "train.py",
)

# Round 25: a timm model named by a module-level configuration dictionary of another file, one
# that mentions none of the words the project index reads files for (imagenette-ddp's
# ``Config = dict(MODEL="efficientnet_b3", ...)`` in ``config.py``, ``Config["MODEL"]``)
TIMM_BY_DICT = (
    HEAD + "import timm\nfrom config import Config\n" + main('model = timm.create_model(Config["MODEL"])')
)
C["timm_model_named_by_config_dict"] = (
    R,
    True,
    {"train.py": TIMM_BY_DICT, "config.py": 'Config = dict(MODEL="efficientnet_b3", LR=3e-4, BS=96)\n'},
    "train.py",
)
C["timm_model_named_by_config_dict_literal"] = (
    R,
    True,
    {
        "train.py": TIMM_BY_DICT.replace('Config["MODEL"]', 'Config["model_name"]'),
        "config.py": 'Config = {"model_name": "resnet50", "lr": 0.1}\n',
    },
    "train.py",
)
C["NEG_timm_model_named_by_config_dict_vit"] = (
    R,
    False,
    {"train.py": TIMM_BY_DICT, "config.py": 'Config = dict(MODEL="vit_base_patch16_224", LR=3e-4)\n'},
    "train.py",
)
C["NEG_timm_model_named_by_config_dicts_that_disagree"] = (
    R,
    False,
    {
        "train.py": TIMM_BY_DICT,
        "config.py": 'Config = dict(MODEL="efficientnet_b3")\n',
        "config_vit.py": 'Config = dict(MODEL="vit_base_patch16_224")\n',
    },
    "train.py",
)

# Round 25: a model built by a static method a trainer class inherits (semseg_benchmark's
# ``Trainer.build_model(cfg)`` of its base ``DistBaseTrainer``, ``model = build_model(cfg).cuda();
# return model``): the base's method, through the move, builds what the project builder builds;
# a model that picks SyncBatchNorm itself is synced
PICKED_NORM_NET = """import torch.nn as nn


class Net(nn.Module):
    def __init__(self, norm_type="syncbn"):
        super().__init__()
        norm = {norm}
        self.conv = nn.Conv2d(3, 16, 3)
        self.bn = norm(16)


def build(cfg):
    return Net(cfg.norm_type)
"""
TRAINER_BASE = """from models import build


class BaseTrainer:
    def __init__(self, cfg):
        self.cfg = cfg

    @staticmethod
    def build_model(cfg):
        model = build(cfg).cuda()
        return model
"""
INHERITED_BUILD = (
    HEAD
    + """from trainer_base import BaseTrainer


class Trainer(BaseTrainer):
    pass


"""
    + main("model = Trainer.build_model(args)")
)
C["inherited_static_builder"] = (
    R,
    True,
    {
        "train.py": INHERITED_BUILD,
        "trainer_base.py": TRAINER_BASE,
        "models.py": PICKED_NORM_NET.replace("{norm}", "nn.BatchNorm2d"),
    },
    "train.py",
)
C["NEG_inherited_static_builder_picks_syncbn"] = (
    R,
    False,
    {
        "train.py": INHERITED_BUILD,
        "trainer_base.py": TRAINER_BASE,
        "models.py": PICKED_NORM_NET.replace(
            "{norm}", 'nn.SyncBatchNorm if norm_type == "syncbn" else nn.BatchNorm2d'
        ),
    },
    "train.py",
)

# Round 25: BatchNorm kept in eval mode while the network trains normalises with running
# statistics: an encoder whose ``train`` override keeps its children in eval mode (Cutie's pixel
# and mask encoders, "freeze BN statistics"), in another file or this one ...
FROZEN_ENCODER = """import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.bn = nn.BatchNorm2d(16)

    def forward(self, x):
        return self.bn(self.conv(x)).mean((2, 3))

    # override the default train() to freeze BN statistics
    def train(self, mode=True):
        self.training = False
        for module in self.children():
            module.train({mode})
        return self
"""
C["NEG_encoder_train_override_keeps_eval"] = (
    R,
    False,
    {
        "train.py": HEAD + "from encoder import Encoder\n" + main("model = Encoder()"),
        "encoder.py": FROZEN_ENCODER.replace("{mode}", "False"),
    },
    "train.py",
)
C["encoder_train_override_passes_mode"] = (
    R,
    True,
    {
        "train.py": HEAD + "from encoder import Encoder\n" + main("model = Encoder()"),
        "encoder.py": FROZEN_ENCODER.replace("{mode}", "mode"),
    },
    "train.py",
)
C["NEG_encoder_train_override_keeps_eval_same_file"] = (
    R,
    False,
    {"train.py": FROZEN_ENCODER.replace("{mode}", "False") + HEAD + main("model = Encoder()")},
    "train.py",
)
# ... and a trainer class whose own ``train()`` puts the wrapped network in eval mode, never in
# train mode (XMem's ``XMemTrainer.train``: ``self.XMem.eval()``)
EVAL_TRAINER = (
    HEAD
    + NET
    + """

class Trainer:
    def __init__(self, local_rank):
        self.net = DDP(Net().cuda(), device_ids=[local_rank])
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)
        self.train()

    def do_pass(self, x, y):
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()

    def train(self):
        self.net.{mode}()
        return self

    def val(self):
        self.net.eval()
        return self
"""
)
C["NEG_trainer_keeps_network_in_eval"] = (
    R,
    False,
    {"train.py": EVAL_TRAINER.replace("{mode}", "eval")},
    "train.py",
)
C["trainer_puts_network_in_train_mode"] = (
    R,
    True,
    {"train.py": EVAL_TRAINER.replace("{mode}", "train")},
    "train.py",
)

# Round 25: each module of a list wrapped in a loop (SemCKD/RepDistiller: ``module_list =
# nn.ModuleList([])``, ``module_list.append(model_s)``, ``for module in module_list: DDP(module)``):
# the wraps are of what was appended, the student built with BatchNorm
MODULE_LIST = (
    HEAD
    + NET
    + """

def main(args, loader, local_rank):
    dist.init_process_group("nccl")
    model_s = {student}
    head = nn.Linear(10, 10)
    scorer = Net()
    scorer.eval()
    module_list = nn.ModuleList([])
    module_list.append(model_s)
    module_list.append(head)
    module_list.cuda(local_rank)
    wrapped = []
    for module in module_list:
        wrapped.append(DDP(module, device_ids=[local_rank]))
    opt = torch.optim.SGD(module_list.parameters(), lr=0.1)
    for x, y in loader:
        loss = nn.functional.cross_entropy(wrapped[1](wrapped[0](x)), y) + scorer(x).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
)
C["module_list_wrapped_in_loop"] = (
    R,
    True,
    {"train.py": MODULE_LIST.replace("{student}", "Net()")},
    "train.py",
)
C["NEG_module_list_wrapped_in_loop_without_batchnorm"] = (
    R,
    False,
    {"train.py": MODULE_LIST.replace("{student}", "nn.Sequential(nn.Linear(3, 10), nn.LayerNorm(10))")},
    "train.py",
)

# Round 26: BatchNorm built only under a configuration option, read into the model as an instance
# attribute (Wsi-Caption's captioning model, after ruotianluo's ``AttModel``: ``self.use_bn =
# args.use_bn``, ``(nn.BatchNorm1d(d),) if self.use_bn else ()``, ``--use_bn`` defaulting to 0): the
# run's default path builds none. The option on by default builds it.
OPTION_MODEL = (
    HEAD
    + """

class CaptionNet(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.use_bn = args.use_bn
        self.embed = nn.Sequential(
            *(((nn.BatchNorm1d(args.feat_size),) if self.use_bn else ()) + (nn.Linear(args.feat_size, 10),))
        )

    def forward(self, x):
        return self.embed(x)
"""
)
OPTION_TRAIN = (
    HEAD
    + """
import argparse
from nets.caption import CaptionNet

parser = argparse.ArgumentParser()
parser.add_argument("--use_bn", type=int, default={default})
parser.add_argument("--feat_size", type=int, default=512)
"""
    + main("model = CaptionNet(args)")
)
C["batchnorm_under_an_option_on_by_default"] = (
    R,
    True,
    {
        "train.py": OPTION_TRAIN.replace("{default}", "1"),
        "nets/__init__.py": "",
        "nets/caption.py": OPTION_MODEL,
    },
    "train.py",
)
C["NEG_batchnorm_under_an_option_off_by_default"] = (
    R,
    False,
    {
        "train.py": OPTION_TRAIN.replace("{default}", "0"),
        "nets/__init__.py": "",
        "nets/caption.py": OPTION_MODEL,
    },
    "train.py",
)
# the same model in the training file, the option tested directly (``if args.use_bn:``)
OPTION_ONE_FILE = (
    HEAD
    + """
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--use_bn", action="store_true"{default})


def build(args):
    layers = [nn.Linear(512, 10)]
    if args.use_bn:
        layers.append(nn.BatchNorm1d(10))
    return nn.Sequential(*layers)
"""
    + main("model = build(args)")
)
C["batchnorm_under_a_store_false_option"] = (
    R,
    True,
    {"train.py": OPTION_ONE_FILE.replace("{default}", ", default=True")},
    "train.py",
)
C["NEG_batchnorm_under_a_store_true_option"] = (
    R,
    False,
    {"train.py": OPTION_ONE_FILE.replace("{default}", "")},
    "train.py",
)

# Round 26: a slot filled by one of two towers picked by a parameter's type (OpenAI CLIP's ``if
# isinstance(vision_layers, (tuple, list)): self.visual = ModifiedResNet(...)`` / ``else: self.visual =
# VisionTransformer(...)``, copied into CLIP4Clip and clip_finetune): the majority rule of run-time
# picks, one BatchNorm candidate of two is no BatchNorm model; both BatchNorm towers are. A file that
# converts behind an option off by default names the BatchNorm runs (Chinese-CLIP's ``--use-bn-sync``
# with its RN50 tower): config-gated.
TOWERS = (
    HEAD
    + """

class ResNetTower(nn.Module):
    def __init__(self, layers, width):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3), nn.BatchNorm2d(width))

    def forward(self, x):
        return self.stem(x).mean((2, 3))


class ViTTower(nn.Module):
    def __init__(self, layers, width):
        super().__init__()
        self.proj = nn.Linear(3, width)
        self.norm = {vit_norm}

    def forward(self, x):
        return self.norm(self.proj(x.mean((2, 3))))


class DualEncoder(nn.Module):
    def __init__(self, vision_layers, width=64):
        super().__init__()
        if isinstance(vision_layers, (tuple, list)):
            self.visual = ResNetTower(vision_layers, width)
        else:
            self.visual = ViTTower(vision_layers, width)
        self.text = nn.Sequential(nn.Embedding(100, width), nn.LayerNorm(width))

    def forward(self, x):
        return self.visual(x)
"""
)
TOWER_TRAIN = (
    HEAD
    + "from nets.towers import DualEncoder\n{pre}"
    + main("model = DualEncoder(vision_layers=args.layers){convert}")
)
C["tower_picked_by_type_both_batchnorm"] = (
    R,
    True,
    {
        "train.py": TOWER_TRAIN.format(pre="", convert=""),
        "nets/__init__.py": "",
        "nets/towers.py": TOWERS.replace("{vit_norm}", "nn.BatchNorm1d(width)"),
    },
    "train.py",
)
C["NEG_tower_picked_by_type_one_batchnorm"] = (
    R,
    False,
    {
        "train.py": TOWER_TRAIN.format(pre="", convert=""),
        "nets/__init__.py": "",
        "nets/towers.py": TOWERS.replace("{vit_norm}", "nn.LayerNorm(width)"),
    },
    "train.py",
)
C["tower_picked_by_type_converted_behind_an_option"] = (
    R,
    True,
    {
        "train.py": TOWER_TRAIN.format(
            pre='import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument("--use_bn_sync", action="store_true")\n',
            convert="\n    if args.use_bn_sync:\n        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)",
        ),
        "nets/__init__.py": "",
        "nets/towers.py": TOWERS.replace("{vit_norm}", "nn.LayerNorm(width)"),
    },
    "train.py",
)


# Round 26 (YZM's ``class NonFcResNet(models.ResNet)``): a project model that subclasses a torchvision
# model class (``ResNet``, ``MobileNetV2``, ...) builds that class's BatchNorm layers through
# ``super().__init__``; a subclass of a torchvision class without BatchNorm (``VisionTransformer``)
# builds none.
TV_SUBCLASS = """
import torch.nn as nn
import torchvision.models as models
from torchvision.models.resnet import BasicBlock


class NonFcNet(models.{base}):
    def __init__(self, num_classes, *args):
        super().__init__(*args)
        self.head = nn.Linear(512, num_classes)


def make_model(num_classes, *args):
    return NonFcNet(num_classes, *args)
"""
TV_SUBCLASS_TRAIN = (
    HEAD + "from model import make_model\n" + main("model = make_model(10, BasicBlock, [2, 2, 2, 2])")
)
C["torchvision_model_subclassed"] = (
    R,
    True,
    {"train.py": TV_SUBCLASS_TRAIN, "model.py": TV_SUBCLASS.format(base="ResNet")},
    "train.py",
)
C["NEG_torchvision_model_subclassed_without_batchnorm"] = (
    R,
    False,
    {"train.py": TV_SUBCLASS_TRAIN, "model.py": TV_SUBCLASS.format(base="VisionTransformer")},
    "train.py",
)
C["torchvision_model_class_built"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from torchvision.models.resnet import ResNet, BasicBlock\n"
        + main("model = ResNet(BasicBlock, [2, 2, 2, 2])")
    },
    "train.py",
)
C["NEG_torchvision_model_class_built_with_group_norm"] = (
    R,
    False,
    {
        "train.py": HEAD
        + "from functools import partial\nfrom torchvision.models.resnet import ResNet, BasicBlock\n"
        + main("model = ResNet(BasicBlock, [2, 2, 2, 2], norm_layer=partial(nn.GroupNorm, 32))")
    },
    "train.py",
)


# Round 26 (audio-ssl's LightningModule building ``architectures.__dict__[config["arch"]](...)``): a
# project module's namespace indexed by a configured name builds one of its defs, as
# ``getattr(archs, name)(...)`` does; the module builds BatchNorm when its defs do. The Trainer runs
# DDP without ``sync_batchnorm=True``. NEG: the module's defs normalise with LayerNorm.
ARCH_PICK_MODULE = """
import lightning as L
import archs


class LitSSL(L.LightningModule):
    def __init__(self, config):
        super().__init__()
        self.model = archs.__dict__[config["arch"]](**config["kwargs"])

    def training_step(self, batch, idx):
        return self.model(batch).sum()
"""
ARCH_PICK_TRAIN = """
import argparse
import lightning as L
from litmod import LitSSL


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=4)
    args = parser.parse_args()
    model = LitSSL({"arch": "SSLModel", "kwargs": {}})
    trainer = L.Trainer(devices=args.gpus, accelerator="gpu", strategy="ddp")
    trainer.fit(model)
"""
ARCH_PICK_ARCHS = """
import torch.nn as nn


class ProjectionHead(nn.Module):
    def __init__(self, dims):
        super().__init__()
        layers = []
        for i in range(len(dims) - 1):
            layers.append(nn.Linear(dims[i], dims[i + 1]))
            layers.append(nn.{norm}(dims[i + 1]))
        self.net = nn.Sequential(*layers)


class SSLModel(nn.Module):
    def __init__(self, dims=(8, 8)):
        super().__init__()
        self.head = ProjectionHead(dims)
"""
C["module_namespace_pick_in_lightning_module"] = (
    R,
    True,
    {
        "train.py": ARCH_PICK_TRAIN,
        "litmod.py": ARCH_PICK_MODULE,
        "archs.py": ARCH_PICK_ARCHS.format(norm="BatchNorm1d"),
    },
    "train.py",
)
C["NEG_module_namespace_pick_without_batchnorm"] = (
    R,
    False,
    {
        "train.py": ARCH_PICK_TRAIN,
        "litmod.py": ARCH_PICK_MODULE,
        "archs.py": ARCH_PICK_ARCHS.format(norm="LayerNorm"),
    },
    "train.py",
)


# Round 26 (audio-ssl's ``train.py``): the LightningModule class chosen by branches (``if 'ssl' in
# stem: module = LitSSL`` / ``else: module = LitCls``) then built as ``module(config)``: the
# candidates decide by the majority rule. NEG: only one of the two builds BatchNorm.
BRANCH_CLASS_TRAIN = """
import argparse
import lightning as L
from litmod import LitSSL, LitCls


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=4)
    parser.add_argument("--kind", default="ssl")
    args = parser.parse_args()
    if "ssl" in args.kind:
        module = LitSSL
    else:
        module = LitCls
    model = module({})
    trainer = L.Trainer(devices=args.gpus, accelerator="gpu", strategy="ddp")
    trainer.fit(model)
"""
BRANCH_CLASS_MODULES = """
import torch.nn as nn
import lightning as L


class LitSSL(L.LightningModule):
    def __init__(self, config):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8))


class LitCls(L.LightningModule):
    def __init__(self, config):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(8, 8), nn.{norm}(8))
"""
C["lightning_module_class_chosen_by_branches"] = (
    R,
    True,
    {"train.py": BRANCH_CLASS_TRAIN, "litmod.py": BRANCH_CLASS_MODULES.format(norm="BatchNorm1d")},
    "train.py",
)
C["NEG_lightning_module_class_chosen_by_branches_one_batchnorm"] = (
    R,
    False,
    {"train.py": BRANCH_CLASS_TRAIN, "litmod.py": BRANCH_CLASS_MODULES.format(norm="LayerNorm")},
    "train.py",
)
# A package's namespace picked by name (``audio_models.__dict__[name](...)``) holds the defs its
# ``__init__.py`` star-imports (``from .kell2018 import *``). NEG: those modules build no BatchNorm.
PKG_PICK_MODULE = ARCH_PICK_MODULE.replace("import archs\n", "import nets.audio as archs\n")
C["package_namespace_pick_of_star_imported_modules"] = (
    R,
    True,
    {
        "train.py": ARCH_PICK_TRAIN,
        "litmod.py": PKG_PICK_MODULE,
        "nets/__init__.py": "",
        "nets/audio/__init__.py": "from .cnn import *\n",
        "nets/audio/cnn.py": ARCH_PICK_ARCHS.format(norm="BatchNorm1d"),
    },
    "train.py",
)
C["NEG_package_namespace_pick_of_star_imported_modules"] = (
    R,
    False,
    {
        "train.py": ARCH_PICK_TRAIN,
        "litmod.py": PKG_PICK_MODULE,
        "nets/__init__.py": "",
        "nets/audio/__init__.py": "from .cnn import *\n",
        "nets/audio/cnn.py": ARCH_PICK_ARCHS.format(norm="LayerNorm"),
    },
    "train.py",
)


# Round 26 (3D-Detection-Code's VoxelNet, the SECOND detector family): a function-local dict of
# project classes, one built by a configured key (``rpn_class = rpn_class_dict[cfg.type]`` ...
# ``rpn_class(...)``): the majority rule decides. NEG: most of the table's classes build none.
LOCAL_TABLE_NET = """
import torch.nn as nn
from nets import heads


class Detector(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        head_class_dict = {
            "ConvHead": heads.ConvHead,
            "NormHead": heads.NormHead,
        }
        head_class = head_class_dict[cfg.head_type]
        self.head = head_class(16)
"""
LOCAL_TABLE_HEADS = """
import torch.nn as nn


class ConvHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, 3), nn.{norm}(c))


class NormHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, 3), nn.BatchNorm2d(c))
"""
LOCAL_TABLE_TRAIN = HEAD + "from nets.detector import Detector\n" + main("model = Detector(args)")
C["class_picked_from_function_local_table"] = (
    R,
    True,
    {
        "train.py": LOCAL_TABLE_TRAIN,
        "nets/__init__.py": "",
        "nets/detector.py": LOCAL_TABLE_NET,
        "nets/heads.py": LOCAL_TABLE_HEADS.format(norm="BatchNorm2d"),
    },
    "train.py",
)
C["NEG_class_picked_from_function_local_table_half_batchnorm"] = (
    R,
    False,
    {
        "train.py": LOCAL_TABLE_TRAIN,
        "nets/__init__.py": "",
        "nets/detector.py": LOCAL_TABLE_NET,
        "nets/heads.py": LOCAL_TABLE_HEADS.format(norm="LayerNorm"),
    },
    "train.py",
)


# Round 26 (incrementvideo's ``hs_policies = []`` then ``hs_policies.append({'params':
# hs_model.parameters()})`` handed to the optimizer): the second wrapped model, holding the BatchNorm,
# is trained through param groups gathered by ``append``. NEG: the gathered groups are the other
# model's; nothing updates the BatchNorm model (a frozen loss network).
TWO_WRAPS = (
    HEAD
    + """
class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return self.fc(x)

"""
    + NET
    + """

def main(args, loader):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = Plain().cuda(local_rank)
    hs_model = Net().cuda(local_rank)
    model = DDP(model, device_ids=[local_rank])
    hs_model = DDP(hs_model, device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    groups = []
    groups.append({"params": {trained}.parameters(), "lr_mult": 10})
    hs_opt = torch.optim.SGD(groups, lr=0.1)
    for x, y in loader:
        loss = nn.functional.cross_entropy(hs_model(model(x)), y)
        opt.zero_grad()
        hs_opt.zero_grad()
        loss.backward()
        opt.step()
        hs_opt.step()
"""
)
C["second_wrap_trained_through_appended_param_groups"] = (
    R,
    True,
    {"train.py": TWO_WRAPS.replace("{trained}", "hs_model")},
    "train.py",
)
C["NEG_second_wrap_untrained_appended_groups_of_other_model"] = (
    R,
    False,
    {"train.py": TWO_WRAPS.replace("{trained}", "model")},
    "train.py",
)


# Round 27 (SlowTV's ``PoseNet(enc_name='resnet18')``, cal-ql's ``VisionBackbone(backbone_name='resnet18')``):
# a project class builds its backbone with ``timm.create_model`` from a constructor parameter whose
# default names a BatchNorm family; a construction that passes nothing builds BatchNorm. NEG: every
# construction hands it a LayerNorm model's name.
TIMM_BACKBONE = (
    HEAD
    + """import timm


class Backbone(nn.Module):
    def __init__(self, num_classes=10, enc_name="resnet18"):
        super().__init__()
        self.encoder = timm.create_model(enc_name, pretrained=False, num_classes=num_classes)

    def forward(self, x):
        return self.encoder(x)
"""
)
C["timm_backbone_name_parameter_default"] = (
    R,
    True,
    {
        "train.py": HEAD + "from models import Backbone\n" + main("model = Backbone(10)"),
        "models.py": TIMM_BACKBONE,
    },
    "train.py",
)
C["NEG_timm_backbone_every_call_names_a_layernorm_model"] = (
    R,
    False,
    {
        "train.py": HEAD
        + "from models import Backbone\n"
        + main("model = Backbone(10, enc_name='vit_small_patch16_224')"),
        "models.py": TIMM_BACKBONE,
    },
    "train.py",
)

# Round 27 (cal-ql's ``trainer = ACTTrainer(cfg.act, policy)`` then ``trainer.setup_multi_gpu(local_rank)``
# wrapping ``self.policy`` in place): the trainer's file reports the wrap of the handed BatchNorm model;
# the entry script's method call, handed no model, is no second wrap of it (NEG), while the
# trainer's own wrap is reported.
RECEIVER_TRAINER = (
    HEAD
    + """

class Trainer:
    def __init__(self, cfg, model):
        self.cfg = cfg
        self.model = model

    def setup_multi_gpu(self, local_rank):
        self.model = self.model.cuda(local_rank)
        self.model = DDP(self.model, device_ids=[local_rank])

    def fit(self, loader):
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for x, y in loader:
            loss = nn.functional.cross_entropy(self.model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
"""
)
RECEIVER_TRAIN = (
    HEAD
    + NET
    + """
from trainer import Trainer


def main(cfg, loader):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = Net()
    trainer = Trainer(cfg, model)
    trainer.setup_multi_gpu(local_rank)
    trainer.fit(loader)
"""
)
C["handed_model_wrapped_in_place_by_trainer_method"] = (
    R,
    True,
    {"train.py": RECEIVER_TRAIN, "trainer.py": RECEIVER_TRAINER},
    "trainer.py",
)
C["NEG_entry_call_of_trainer_method_wrapping_its_own_model"] = (
    R,
    False,
    {"train.py": RECEIVER_TRAIN, "trainer.py": RECEIVER_TRAINER},
    "train.py",
)

# Round 28 (MGMatting's ``if CONFIG.dist: G = convert_sync_batchnorm(G)`` and, apart, ``if CONFIG.dist:
# G = DDP(G)``): a conversion under the same test as the wrap is skipped only by a run that wraps
# nothing (NEG); a conversion under its own off-by-default option beside that wrap stays a finding.
DIST_OPTION = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--dist", action="store_true")
parser.add_argument("--sync_bn", action="store_true")
"""


def dist_train(convert_test):
    return (
        HEAD
        + DIST_OPTION
        + NET
        + f"""
def main(args, loader):
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    model = Net().cuda(local_rank)
    if {convert_test}:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if args.dist:
        dist.init_process_group("nccl")
        model = DDP(model, device_ids=[local_rank])
    else:
        model = nn.DataParallel(model)
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
"""
    )


C["conversion_under_its_own_off_option_beside_dist_wrap"] = (
    R,
    True,
    {"train.py": dist_train("args.sync_bn")},
    "train.py",
)
C["NEG_conversion_under_the_wrap_s_own_test"] = (
    R,
    False,
    {"train.py": dist_train("args.dist")},
    "train.py",
)

# Round 28 (elu-lab FastSpeech2's ``self.use_postnet = model_config["fastspeech_two"]["use_posetnet"]``
# then ``if self.use_postnet: self.postnet = PostNet()``, the shipped YAML setting it False): a
# project BatchNorm module built only under a configuration option the shipped configurations turn
# off is not on the run's path (NEG); turned on, it is.
POSTNET_MODEL = (
    HEAD
    + """

class PostNet(nn.Module):
    def __init__(self, channels=80):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, 5, padding=2)
        self.norm = nn.BatchNorm1d(channels)

    def forward(self, x):
        return self.norm(self.conv(x))


class Acoustic(nn.Module):
    def __init__(self, model_config):
        super().__init__()
        self.proj = nn.Linear(model_config["model"]["hidden"], 80)
        self.use_postnet = model_config["model"]["use_postnet"]
        if self.use_postnet:
            self.postnet = PostNet()

    def forward(self, x):
        out = self.proj(x)
        return out + self.postnet(out) if self.use_postnet else out
"""
)


def postnet_project(flag):
    return {
        "train.py": HEAD
        + "import yaml\nfrom model import Acoustic\n"
        + main('model = Acoustic(yaml.safe_load(open("config/model.yaml")))'),
        "model.py": POSTNET_MODEL,
        "config/model.yaml": f"model:\n  hidden: 256\n  use_postnet: {flag}\n",
    }


C["project_module_built_under_option_the_config_turns_on"] = (
    R,
    True,
    postnet_project("True"),
    "train.py",
)
C["NEG_project_module_built_under_option_the_config_turns_off"] = (
    R,
    False,
    postnet_project("False"),
    "train.py",
)

# Round 28 (CHORE's PIFu-style filters: ``self.opt = opt``, ``if self.opt.norm == 'batch':
# nn.BatchNorm2d(64)`` and ``ConvBlock(64, 128, self.opt.norm)`` of a block building BatchNorm only for
# ``norm == 'batch'``, with ``--norm`` defaulting to ``group`` in the options module): the norm the
# options name decides (NEG); an options default of ``batch`` builds BatchNorm.
NORM_OPTIONS = """
import argparse


def get_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--norm", type=str, default="{norm}")
    parser.add_argument("--epochs", type=int, default=10)
    return parser
"""
NORM_FILTER = (
    HEAD
    + """

class ConvBlock(nn.Module):
    def __init__(self, cin, cout, norm="batch"):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        if norm == "batch":
            self.bn = nn.BatchNorm2d(cout)
        elif norm == "group":
            self.bn = nn.GroupNorm(8, cout)

    def forward(self, x):
        return self.bn(self.conv(x))


class Filter(nn.Module):
    def __init__(self, opt):
        super().__init__()
        self.opt = opt
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3)
        if self.opt.norm == "batch":
            self.bn1 = nn.BatchNorm2d(64)
        elif self.opt.norm == "group":
            self.bn1 = nn.GroupNorm(32, 64)
        self.block = ConvBlock(64, 128, self.opt.norm)
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc(self.block(self.bn1(self.conv1(x))).mean((2, 3)))
"""
)


def norm_project(norm):
    return {
        "train.py": HEAD
        + "from options import get_parser\nfrom model import Filter\n"
        + main("model = Filter(args)")
        + "\n\nif __name__ == '__main__':\n    main(get_parser().parse_args(), [])\n",
        "options.py": NORM_OPTIONS.format(norm=norm),
        "model.py": NORM_FILTER,
    }


C["norm_picked_by_options_default_batch"] = (R, True, norm_project("batch"), "train.py")
C["NEG_norm_picked_by_options_default_group"] = (R, False, norm_project("group"), "train.py")

# Round 28 (DensePolicy's and GlassesRobot's MinkowskiEngine ResNet14 point-cloud encoders): a sparse
# library's BatchNorm layer (``ME.MinkowskiBatchNorm``, a torch BatchNorm1d inside) keeps each rank's
# statistics under DDP; MinkowskiEngine's own conversion to ``MinkowskiSyncBatchNorm`` syncs it (NEG).
SPARSE_ENCODER = (
    HEAD
    + """
import MinkowskiEngine as ME


class SparseEncoder(nn.Module):
    def __init__(self, cin=3, cout=64):
        super().__init__()
        self.conv = ME.MinkowskiConvolution(cin, cout, kernel_size=3, dimension=3)
        self.norm = ME.MinkowskiBatchNorm(cout)
        self.act = ME.MinkowskiReLU()

    def forward(self, x):
        return self.act(self.norm(self.conv(x)))
"""
)


def sparse_project(convert=""):
    build = "model = SparseEncoder()" + (f"\n    {convert}" if convert else "")
    return {
        "train.py": HEAD + "import MinkowskiEngine as ME\nfrom encoder import SparseEncoder\n" + main(build),
        "encoder.py": SPARSE_ENCODER,
    }


C["minkowski_batchnorm_encoder"] = (R, True, sparse_project(), "train.py")
C["NEG_minkowski_batchnorm_encoder_converted"] = (
    R,
    False,
    sparse_project("model = ME.MinkowskiSyncBatchNorm.convert_sync_batchnorm(model)"),
    "train.py",
)

# ... the same test read apart, not stopping the walk: a conversion in one branch of a model choice
# (fast-autoaugment's ``elif 'efficientnet' in name:`` converting ``if local_rank >= 0:``, as the wrap
# below is) leaves the other branches' BatchNorm models unsynced: still a (config-gated) finding.
C["conversion_under_wrap_test_in_one_branch_of_model_choice"] = (
    R,
    True,
    {
        "train.py": HEAD
        + DIST_OPTION
        + "from models import Net\n"
        + """
def build(name, args):
    if name == "net":
        model = Net()
    elif "other" in name:
        model = Net()
        if args.dist:
            model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    else:
        raise NameError(name)
    if args.dist:
        model = DDP(model.cuda())
    return model


def main(args, loader):
    model = build(args.model, args)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
""",
        "models.py": HEAD + NET,
    },
    "train.py",
)

# Round 28 (SAM-Adapter's train.py): the wrap is thrown away at once (``model = model.module``): the
# BatchNorm layers train on the bare module, with no DDP for SyncBatchNorm to complement. The near-miss
# keeps the wrap and names its module apart.
C["NEG_wrap_rebound_to_its_module_at_once"] = (
    R,
    False,
    {
        "train.py": HEAD
        + NET
        + main("model = Net()", "model = DDP(model, device_ids=[local_rank])\n    model = model.module")
    },
    "train.py",
)
C["wrap_kept_beside_its_module"] = (
    R,
    True,
    {
        "train.py": HEAD
        + NET
        + main(
            "model = Net()",
            "model = DDP(model, device_ids=[local_rank])\n    model_without_ddp = model.module",
        )
    },
    "train.py",
)

# Round 28 (face-vid2vid's vendored Synchronized-BatchNorm-PyTorch): a BatchNorm subclass that syncs
# only through DataParallel replication (the ``__data_parallel_replicate__`` hook) runs plain
# ``F.batch_norm`` in a DDP process, which holds no replica: per-rank BatchNorm. A synchronised class
# that all-reduces across processes (NEG) syncs.
REPLICA_SYNC_BN = """
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm


class _SynchronizedBatchNorm(_BatchNorm):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True):
        super().__init__(num_features, eps=eps, momentum=momentum, affine=affine)
        self._is_parallel = False

    def forward(self, input):
        if not (self._is_parallel and self.training):
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                                self.training, self.momentum, self.eps)
        return self._gather_from_replicas(input)

    def __data_parallel_replicate__(self, ctx, copy_id):
        self._is_parallel = True


class SynchronizedBatchNorm2d(_SynchronizedBatchNorm):
    pass
"""
PROCESS_SYNC_BN = """
import torch.distributed as dist
from torch.nn.modules.batchnorm import _BatchNorm


class SyncBN2d(_BatchNorm):
    def forward(self, input):
        mean = input.mean((0, 2, 3))
        dist.all_reduce(mean)
        return (input - mean[None, :, None, None]) * self.weight[None, :, None, None]
"""
VENDORED_NET = """
import torch.nn as nn
from sync_batchnorm.batchnorm import {cls} as BatchNorm2d


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.norm = BatchNorm2d(16)

    def forward(self, x):
        return self.norm(self.conv(x)).mean((2, 3))
"""


def vendored_sync_project(cls, source):
    return {
        "train.py": HEAD + "from encoder import Encoder\n" + main("model = Encoder()"),
        "encoder.py": VENDORED_NET.format(cls=cls),
        "sync_batchnorm/__init__.py": "",
        "sync_batchnorm/batchnorm.py": source,
    }


C["replica_only_synchronized_batchnorm_under_ddp"] = (
    R,
    True,
    vendored_sync_project("SynchronizedBatchNorm2d", REPLICA_SYNC_BN),
    "train.py",
)
C["NEG_process_synchronized_batchnorm_under_ddp"] = (
    R,
    False,
    vendored_sync_project("SyncBN2d", PROCESS_SYNC_BN),
    "train.py",
)

# Round 28 (MNCDV3's ViT-Adapter backbone building nn.SyncBatchNorm beside UperNet heads with plain
# nn.BatchNorm2d; the medicaldiffusion VQGAN handing norm_layer=nn.BatchNorm2d to discriminators whose
# default is nn.SyncBatchNorm): SyncBatchNorm in one part of a model converts nothing else. A model
# whose every BatchNorm part builds SyncBatchNorm (NEG) is synced.
SYNC_PARTS = """
import torch.nn as nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.norm = nn.SyncBatchNorm(16)

    def forward(self, x):
        return self.norm(self.conv(x))


class Head(nn.Module):
    def __init__(self, norm=nn.BatchNorm2d):
        super().__init__()
        self.conv = nn.Conv2d(16, 16, 3)
        self.norm = norm(16)

    def forward(self, x):
        return self.norm(self.conv(x)).mean((2, 3))


class Discriminator(nn.Module):
    def __init__(self, norm_layer=nn.SyncBatchNorm):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.norm = norm_layer(16)

    def forward(self, x):
        return self.norm(self.conv(x)).mean((2, 3))
"""


def sync_parts_project(model):
    return {
        "train.py": HEAD + "from model import Model\n" + main("model = Model()"),
        "model.py": SYNC_PARTS + model,
    }


C["syncbn_backbone_beside_batchnorm_head"] = (
    R,
    True,
    sync_parts_project(
        """

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.head = Head()

    def forward(self, x):
        return self.head(self.backbone(x))
"""
    ),
    "train.py",
)
C["NEG_syncbn_backbone_beside_syncbn_head"] = (
    R,
    False,
    sync_parts_project(
        """

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.head = Discriminator()

    def forward(self, x):
        return self.head(self.backbone(x))
"""
    ),
    "train.py",
)
C["syncbn_default_replaced_by_batchnorm"] = (
    R,
    True,
    sync_parts_project(
        """

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.disc = Discriminator(norm_layer=nn.BatchNorm2d)

    def forward(self, x):
        return self.disc(x)
"""
    ),
    "train.py",
)
