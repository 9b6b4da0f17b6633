# The base trainer clips with the torch function; only its FSDP subclass wraps the model, and that
# subclass overrides the clipping method with FSDP1's own clip_grad_norm_ (DPO's FSDPTrainer).
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


class BasicTrainer:
    def __init__(self, policy, max_norm):
        self.policy = policy
        self.max_norm = max_norm

    def clip_gradient(self):
        return torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_norm).item()


class FSDPTrainer(BasicTrainer):
    def __init__(self, policy, max_norm):
        super().__init__(policy, max_norm)
        self.policy = FSDP(policy, use_orig_params=False)

    def clip_gradient(self):
        return self.policy.clip_grad_norm_(self.max_norm).item()
