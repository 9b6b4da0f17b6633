# MRIGAN4: Lightning wraps the module in DDP itself (strategy='ddp') and keeps its BatchNorm per rank
# unless the Trainer gets sync_batchnorm=True.
import pytorch_lightning as pl
import torch
import torch.nn as nn


class UNet(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(2, 32, 3), nn.BatchNorm2d(32), nn.ReLU())

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.body(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())


if __name__ == "__main__":
    model = UNet()
    trainer = pl.Trainer(accelerator="gpu", devices=4, strategy="ddp", max_epochs=10)  # expect: batchnorm-unsynced
    trainer.fit(model)
