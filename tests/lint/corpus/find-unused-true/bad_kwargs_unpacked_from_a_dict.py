import torch


def wrap(model_1, model_2, cfg):
    # OpenUnReID MMT: one dict of DDP options unpacked into both wraps
    ddp_cfg = {
        "device_ids": [cfg.gpu],
        "output_device": cfg.gpu,
        "find_unused_parameters": True,  # expect: find-unused-true
    }
    model_1 = torch.nn.parallel.DistributedDataParallel(model_1, **ddp_cfg)
    model_2 = torch.nn.parallel.DistributedDataParallel(model_2, **ddp_cfg)
    return model_1, model_2
