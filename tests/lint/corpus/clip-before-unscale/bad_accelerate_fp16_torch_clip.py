# accelerate in fp16 keeps a GradScaler: accelerator.backward scales the loss, and only the prepared
# optimizer's step unscales, so torch's clip sees gradients ~2**16 too large.
import torch
from accelerate import Accelerator


class Trainer:
    def __init__(self, args, model, optimizer):
        self.args = args
        self.accelerator = Accelerator(mixed_precision="fp16" if args.fp16 else None)
        self.model, self.optimizer = self.accelerator.prepare(model, optimizer)

    def train_step(self, batch):
        loss = self.model(batch)
        self.accelerator.backward(loss)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)  # expect: clip-before-unscale
        self.optimizer.step()
        self.optimizer.zero_grad()
