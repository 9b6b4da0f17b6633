# nanodet: the Trainer's strategy is a local bound to "ddp" when several devices are configured
# (and to None otherwise); the accelerator local only ever names a device. Lightning then wraps the
# BatchNorm module in DDP without sync_batchnorm=True (gated on that binding).
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


def main(gpu_ids):
    task = Detector()
    if gpu_ids == -1:
        accelerator, devices, strategy = "cpu", None, None
    else:
        accelerator, devices, strategy = "gpu", gpu_ids, None
    if devices and len(devices) > 1:
        strategy = "ddp"
    trainer = pl.Trainer(accelerator=accelerator, devices=devices, strategy=strategy)  # expect: batchnorm-unsynced
    trainer.fit(task)
