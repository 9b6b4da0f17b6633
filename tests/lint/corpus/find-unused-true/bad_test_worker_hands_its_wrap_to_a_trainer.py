import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def test(gpu, args, build_model, loader, fine_tune):
    # the wrapped model is handed on: the callee may train it
    model = build_model(args)
    model = DDP(model.cuda(), device_ids=[gpu], find_unused_parameters=True)  # expect: find-unused-true
    model.eval()
    fine_tune(model, loader)
