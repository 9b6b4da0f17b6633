# KAIR-style: the option is read from a config dict whose fallback is True.
import torch
from torch.nn.parallel import DistributedDataParallel


def model_to_device(opt, network):
    find_unused = opt.get("find_unused_parameters", True)
    network = DistributedDataParallel(network, device_ids=[torch.cuda.current_device()], find_unused_parameters=opt.get("find_unused_parameters", True))  # expect: find-unused-true
    return network, find_unused
