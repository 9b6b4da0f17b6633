# The helper compiles only the copy it returns second (an evaluation model), or compiles and then
# rebinds the name to something else before returning it: the wrapped model is not the compiled one.
import torch
from torch.nn.parallel import DistributedDataParallel


def init_network(args, build):
    net = build(args)
    eval_net = build(args)
    if args.torch_compile:
        eval_net = torch.compile(eval_net)
    return net, eval_net


def init_plain(args, build):
    net = build(args)
    net = torch.compile(net)
    net = build(args)
    return net


def main_worker(args, build):
    net, eval_net = init_network(args, build)
    net = DistributedDataParallel(net, device_ids=[0])
    other = init_plain(args, build)
    other = DistributedDataParallel(other, device_ids=[0])
    return net, eval_net, other
