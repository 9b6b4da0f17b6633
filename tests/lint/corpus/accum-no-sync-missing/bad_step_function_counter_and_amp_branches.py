# Pointcept-style trainer: run_step is one micro-step; it backprops on every call (through the
# scaler or not: both branches of the amp choice) and steps when a counter reaches the
# accumulation steps. Nothing skips DDP's all-reduce on the other calls (config-gated by the count).
import torch
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self, model, optimizer, scheduler, cfg):
        self.model = DistributedDataParallel(model.cuda())
        self.optimizer, self.scheduler, self.cfg = optimizer, scheduler, cfg
        self.scaler = torch.cuda.amp.GradScaler() if cfg.enable_amp else None
        self.counter = 0

    def run_step(self, batch):
        if self.counter == 0:
            self.optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16, enabled=self.cfg.enable_amp):
            loss = self.model(batch)["loss"] / self.cfg.gradient_accumulation_steps
        if self.cfg.enable_amp:
            self.scaler.scale(loss).backward()  # expect: accum-no-sync-missing
        else:
            loss.backward()
        self.counter += 1
        if self.counter >= self.cfg.gradient_accumulation_steps:
            if self.cfg.enable_amp:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
            self.scheduler.step()
            self.counter = 0

    def train(self, loader):
        for batch in loader:
            self.run_step(batch)
