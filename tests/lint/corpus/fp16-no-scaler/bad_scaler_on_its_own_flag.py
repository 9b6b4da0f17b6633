# RecBole-style: the autocast is switched by `enable_amp`, the GradScaler by a separate
# `enable_scaler`: with amp on and the scaler off, float16 trains unscaled (config-gated).
import torch


class Trainer:
    def __init__(self, model, optimizer, config):
        self.model = model
        self.optimizer = optimizer
        self.device = config["device"]
        self.enable_amp = config["enable_amp"]
        self.enable_scaler = config["enable_scaler"]

    def train_epoch(self, loader):
        scaler = torch.amp.GradScaler(enabled=self.enable_scaler)
        for batch in loader:
            self.optimizer.zero_grad()
            with torch.autocast(device_type=self.device.type, enabled=self.enable_amp):  # expect: fp16-no-scaler
                loss = self.model(batch)
            scaler.scale(loss).backward()
            scaler.step(self.optimizer)
            scaler.update()
