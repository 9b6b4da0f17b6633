# wenet-style: ``not grad_ckpt`` is True unless the encoder turns gradient checkpointing on, and
# ``grad_ckpt`` is False on every path by default.
import torch


def wrap_cuda_model(model):
    if hasattr(model, "encoder"):
        grad_ckpt = getattr(model.encoder, "gradient_checkpointing", False)
    else:
        grad_ckpt = False
    return torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=not grad_ckpt)  # expect: find-unused-true
