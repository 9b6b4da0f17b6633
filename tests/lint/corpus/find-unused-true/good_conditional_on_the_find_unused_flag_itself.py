# A conditional on the setting itself is the setting, like a plain config value
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def build(model, args, local_rank):
    model = DDP(model.cuda(), device_ids=[local_rank], find_unused_parameters=True if args.find_unused else False)
    return model
