import torch


class Builder:
    def wrap(self, net):
        self.model = torch.nn.parallel.DistributedDataParallel(torch.compile(net))  # expect: compile-before-ddp
