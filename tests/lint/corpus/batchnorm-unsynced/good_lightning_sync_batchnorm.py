# The same Lightning DDP run with sync_batchnorm=True: Lightning converts the BatchNorm itself.
# A Trainer with no DDP strategy written (one device) is not reported either.
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
    trainer = pl.Trainer(accelerator="gpu", devices=4, strategy="ddp", sync_batchnorm=True)
    trainer.fit(model)
    single = pl.Trainer(accelerator="gpu", devices=1, max_epochs=1)
    single.fit(UNet())
