import torch


class Setup:
    def build(self, net):
        self.model = torch.nn.parallel.DistributedDataParallel(
            net,
            find_unused_parameters=True,  # expect: find-unused-true
        )
