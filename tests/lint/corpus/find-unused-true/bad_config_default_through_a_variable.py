# KAIR models/model_base.py: the option is read into a variable first, whose fallback is True.
import torch
from torch.nn.parallel import DistributedDataParallel


class ModelBase:
    def __init__(self, opt):
        self.opt = opt

    def model_to_device(self, network):
        if self.opt["dist"]:
            find_unused_parameters = self.opt.get("find_unused_parameters", True)
            network = DistributedDataParallel(
                network,
                device_ids=[torch.cuda.current_device()],
                find_unused_parameters=find_unused_parameters,  # expect: find-unused-true
            )
        return network
