from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs


class ReferenceWrapper:
    def __init__(self, accelerator, model, loader):
        self.model, self.loader = accelerator.prepare(model, loader)


def main(policy, reference, loader, train):
    accelerator = Accelerator(kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=False)])
    reference.eval()
    # a second Accelerator only to cache the frozen reference model's log-probs: no backward through it
    reference_accelerator = Accelerator(kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])
    reference_accelerator.print("precomputing logprobs ...")
    cached = ReferenceWrapper(reference_accelerator, reference, loader)
    policy, loader = accelerator.prepare(policy, loader)
    train(accelerator, policy, loader, cached)
