# VAR / KAIR: BatchNorm classes are only inspected (isinstance) or patched in a loop; the model
# built here has none.
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def init_weights(model):
    for m in model.modules():
        if isinstance(m, (nn.LayerNorm, nn.BatchNorm2d)):
            nn.init.ones_(m.weight)
    for clz in (nn.Linear, nn.BatchNorm2d):
        setattr(clz, "reset_parameters", lambda self: None)


def main(width):
    model = nn.Sequential(nn.Linear(width, width), nn.LayerNorm(width))
    init_weights(model)
    return DDP(model)
