class Wrapper:
    def __init__(self, module, device_ids=None, find_unused_parameters=False):
        self.module = module
        self.find_unused_parameters = find_unused_parameters


class DDP(Wrapper):
    """A project wrapper that is no DistributedDataParallel: its keyword configures nothing of DDP."""


def configure(task, gpu):
    return DDP(task, device_ids=[gpu], find_unused_parameters=True)
