# CBIM `train_ddp.py` style: a same-file helper builds the model, compiles it behind its own flag and
# returns it beside an EMA copy; the caller converts and wraps it in DDP (config-gated by the flag).
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


def init_network(args, build):
    net = build(args)
    ema_net = build(args) if args.ema else None
    if args.torch_compile:
        net = torch.compile(net)
    return net, ema_net


def main_worker(args, build):
    net, ema_net = init_network(args, build)
    net.to("cuda")
    net = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    net = DistributedDataParallel(net, device_ids=[0])  # expect: compile-before-ddp
    return net, ema_net
