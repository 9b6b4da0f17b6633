# TGL-style: the search is turned on by a conditional for the multi-snapshot configurations
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def build(model, sample_param, local_rank):
    find_unused_parameters = True if sample_param["history"] > 1 else False
    model = DDP(model.cuda(), device_ids=[local_rank], find_unused_parameters=find_unused_parameters)  # expect: find-unused-true
    return model
