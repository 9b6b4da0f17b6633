"""rank0-only-loss-log: what a project model's ``forward`` hands back beside the loss, combined across
ranks inside the model (round 26). mmcv/mmdet's ``_parse_losses`` (copied by SoftGroup and many
detectors) all-reduces every ``log_vars`` item before ``return loss, log_vars``: the caller's
``loss, log_vars = model(batch)`` then logs every rank's mean. Each positive is the near miss whose
logged value is still this rank's own."""

MODEL = """
from collections import OrderedDict

import torch
import torch.distributed as dist
import torch.nn as nn


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 2)

    def forward(self, batch, return_loss=False):
        if return_loss:
            return self.forward_train(batch)
        return self.forward_test(batch)

    def forward_train(self, batch):
        out = self.head(batch["x"])
        losses = {"loss_cls": nn.functional.cross_entropy(out, batch["y"])}
        return self.parse_losses(losses)

    def forward_test(self, batch):
        ret = {"pred": self.head(batch["x"]).argmax(1)}
        return ret

    def parse_losses(self, losses):
        log_vars = OrderedDict()
        for name, value in losses.items():
            log_vars[name] = value.mean()
        loss = sum(v for k, v in log_vars.items() if "loss" in k)
        log_vars["loss"] = loss
        for name, value in log_vars.items():
            if dist.is_available() and dist.is_initialized():
                value = value.data.clone()
                REDUCE
            log_vars[name] = value.item()
        AFTER
        return loss, log_vars
"""

TRAIN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from model import Detector


def train(epoch, model, optimizer, loader, rank):
    for i, batch in enumerate(loader):
        loss, log_vars = model(batch, return_loss=True)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0 and i % 10 == 0:
            LOG


def main(loader):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    model = Detector().cuda()
    model = DistributedDataParallel(model, device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(10):
        train(epoch, model, optimizer, loader, rank)
"""

REDUCE = "dist.all_reduce(value.div_(dist.get_world_size()))"
LOG_VARS = 'print(", ".join(f"{k}: {v:.4f}" for k, v in log_vars.items()))  # the log'


def at(source: str, marker: str) -> str:
    """``train.py:LINE`` of the line of ``source`` holding ``marker``."""
    line = next(i for i, text in enumerate(source.splitlines(), start=1) if marker in text)
    return f"train.py:{line}"


def project(reduce: str = REDUCE, after: str = "pass", log: str = LOG_VARS) -> dict[str, str]:
    return {
        "model.py": MODEL.replace("REDUCE", reduce).replace("AFTER", after),
        "train.py": TRAIN.replace("LOG", log),
    }


R = "rank0-only-loss-log"
LOGGED = at(TRAIN.replace("LOG", LOG_VARS), "the log")
C: dict[str, tuple[str, bool, dict[str, str], str]] = {}

# a parse_losses that only reads each term out (``.item()``): log_vars holds this rank's values
C["model_log_vars_not_reduced"] = (R, True, project(reduce="pass"), LOGGED)
# SoftGroup: every item all-reduced (divided by the world size) before it is returned
C["NEG_model_log_vars_all_reduced"] = (R, False, project(), LOGGED)
# ... the same, the model built and wrapped in the function that logs
SAME_SCOPE = (
    TRAIN.replace("LOG", LOG_VARS)
    .replace(
        "def train(epoch, model, optimizer, loader, rank):", "def train(epoch, optimizer, loader, rank):"
    )
    .replace(
        "    for i, batch in", "    model = DistributedDataParallel(Detector().cuda())\n    for i, batch in"
    )
    .replace("train(epoch, model, optimizer, loader, rank)", "train(epoch, optimizer, loader, rank)")
)
C["NEG_model_log_vars_all_reduced_same_scope"] = (
    R,
    False,
    {"model.py": project()["model.py"], "train.py": SAME_SCOPE},
    at(SAME_SCOPE, "the log"),
)
# a local term written into log_vars after the loop that reduced the others
C["model_log_vars_local_term_after_reduce"] = (
    R,
    True,
    project(after='log_vars["loss_local"] = loss.item()'),
    LOGGED,
)
# the loss itself, returned beside the reduced log_vars, is still this rank's own
C["model_loss_beside_reduced_log_vars"] = (
    R,
    True,
    project(log='print(f"loss {loss.item():.4f}")  # the log'),
    LOGGED,
)

# the model's loop walks log_vars' keys and replaces each item by a reducing helper's value (FSRE-Depth's
# ``for k in d: d[k] = reduce_tensor(d[k])``, read the same way as in a training step); the near-miss
# walks the keys of another dict, which leaves ``log_vars["loss"]`` this rank's own
KEYS_LOOP = """        for name in KEYS:
            log_vars[name] = reduce_tensor(log_vars[name].data)
"""
ITEMS_LOOP = """        for name, value in log_vars.items():
            if dist.is_available() and dist.is_initialized():
                value = value.data.clone()
                REDUCE
            log_vars[name] = value.item()
"""
REDUCE_TENSOR = """

def reduce_tensor(tensor):
    rt = tensor.clone()
    dist.all_reduce(rt)
    return rt / dist.get_world_size()
"""


def keys_project(keys: str) -> dict[str, str]:
    files = project()
    files["model.py"] = (
        files["model.py"].replace(ITEMS_LOOP.replace("REDUCE", REDUCE), KEYS_LOOP.replace("KEYS", keys))
        + REDUCE_TENSOR
    )
    return files


C["NEG_model_log_vars_keys_replaced_by_reduced"] = (R, False, keys_project("list(log_vars.keys())"), LOGGED)
C["model_log_vars_keys_of_another_dict_replaced"] = (R, True, keys_project("losses"), LOGGED)
