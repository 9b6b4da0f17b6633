# A device read at run time with bfloat16, or with a GradScaler: nothing underflows unscaled.
import torch


class Trainer:
    def __init__(self, model, optimizer, device):
        self.model = model
        self.optimizer = optimizer
        self.device = device

    def bf16_step(self, batch):
        with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16):
            loss = self.model(batch).mean()
        loss.backward()
        self.optimizer.step()


class ScaledTrainer(Trainer):
    def step(self, batch, scaler: torch.amp.GradScaler):
        with torch.autocast(device_type=self.device.type):
            loss = self.model(batch).mean()
        scaler.scale(loss).backward()
        scaler.step(self.optimizer)
