# neuraloperator style: `torch.autocast(device_type=self.autocast_device_type)` with no dtype is
# float16 whenever the trainer runs on a GPU, and nothing scales the loss (config-gated: CUDA).
import torch


class Trainer:
    def __init__(self, model, optimizer, device, mixed_precision=False):
        self.model = model
        self.optimizer = optimizer
        self.autocast_device_type = device.type
        self.mixed_precision = mixed_precision

    def train_one_batch(self, batch):
        self.optimizer.zero_grad()
        if self.mixed_precision:
            with torch.autocast(device_type=self.autocast_device_type):  # expect: fp16-no-scaler
                loss = self.model(batch).mean()
        else:
            loss = self.model(batch).mean()
        loss.backward()
        self.optimizer.step()
