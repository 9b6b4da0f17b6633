import torch


def wrap(model, cfg):
    ddp_cfg = {
        "device_ids": [cfg.gpu],
        "output_device": cfg.gpu,
        "find_unused_parameters": False,
    }
    return torch.nn.parallel.DistributedDataParallel(model, **ddp_cfg)
