# The FSDP subclass wraps the model but inherits the base's clipping method, so the torch function
# runs on the FSDP1 model.
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


class BasicTrainer:
    def __init__(self, policy, max_norm):
        self.policy = policy
        self.max_norm = max_norm

    def clip_gradient(self):
        return torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_norm).item()  # expect: fsdp-clip-wrong


class FSDPTrainer(BasicTrainer):
    def __init__(self, policy, max_norm):
        super().__init__(policy, max_norm)
        self.policy = FSDP(policy, use_orig_params=False)
