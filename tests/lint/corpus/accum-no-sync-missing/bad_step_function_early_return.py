# OCP/Equiformer style: the backward helper returns early unless the step counter closes an
# accumulation window, so the optimizer steps once every `grad_accumulation_steps` calls while DDP
# all-reduces on every call.
import torch
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self, model, config):
        self.model = DistributedDataParallel(model)
        self.optimizer = torch.optim.AdamW(self.model.parameters())
        self.grad_accumulation_steps = config["optim"].get("grad_accumulation_steps", 1)
        self.step = 0

    def _backward(self, loss):
        if self.grad_accumulation_steps == 1:
            self.optimizer.zero_grad()
        loss.backward()  # expect: accum-no-sync-missing
        if self.grad_accumulation_steps != 1:
            if self.step % self.grad_accumulation_steps != 0:
                return
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        if self.grad_accumulation_steps != 1:
            self.optimizer.zero_grad()

    def train(self, loader):
        for self.step, batch in enumerate(loader, start=1):
            loss = self.model(batch).mean() / self.grad_accumulation_steps
            self._backward(loss)
