from torch.nn.parallel import DistributedDataParallel


def wrap(model, cfg, local_rank):
    options = {"device_ids": [local_rank], "find_unused_parameters": cfg.find_unused}
    return DistributedDataParallel(model, **options)
