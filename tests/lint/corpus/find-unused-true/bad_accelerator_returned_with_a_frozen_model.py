from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs


def build(model, loader):
    model.requires_grad_(False)
    model.lm_head.requires_grad_(True)  # the head is trained: the handed Accelerator trains it
    accelerator = Accelerator(
        kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)]  # expect: find-unused-true
    )
    model, loader = accelerator.prepare(model, loader)
    return accelerator, model, loader
