from torch.nn.parallel import DistributedDataParallel


def setup(module):
    module.compile()
    wrapped = DistributedDataParallel(module)  # expect: compile-before-ddp
    return wrapped
