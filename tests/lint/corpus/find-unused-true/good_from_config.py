import torch


def wrap(model, cfg):
    return torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=cfg.find_unused)
