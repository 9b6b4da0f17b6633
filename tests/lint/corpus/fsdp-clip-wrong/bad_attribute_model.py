from torch.distributed.fsdp import FullyShardedDataParallel
from torch.nn.utils import clip_grad_norm_


class Trainer:
    def __init__(self, net):
        self.model = FullyShardedDataParallel(net, use_orig_params=True)

    def clip(self, max_norm):
        return clip_grad_norm_(self.model.parameters(), max_norm)  # expect: fsdp-clip-wrong
