# The Trainer's strategy and accelerator locals are bound only to a device or a single-process
# strategy: Lightning runs no DDP, so its BatchNorm needs no synchronisation.
import pytorch_lightning as pl
import torch
import torch.nn as nn


class Detector(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU())

    def training_step(self, batch, batch_idx):
        return self.body(batch).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main(use_gpu):
    task = Detector()
    accelerator, strategy = "cpu", "auto"
    if use_gpu:
        accelerator = "gpu"
    trainer = pl.Trainer(accelerator=accelerator, devices=1, strategy=strategy)
    trainer.fit(task)
