# The negation of a setting that is True by default (or a value no default decides) is not True
# unless configured: nothing to report.
import torch


def wrap(model, cfg, static_graph):
    use_ckpt = getattr(cfg, "gradient_checkpointing", True)
    model = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=not use_ckpt)
    return torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=not static_graph)
