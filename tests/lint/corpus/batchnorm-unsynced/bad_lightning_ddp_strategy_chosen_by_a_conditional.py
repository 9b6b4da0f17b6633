# FasterNet: `strategy=DDPPlugin(...) if args.strategy == 'ddp' else args.strategy` runs DDP when
# that test holds; the Trainer has no sync_batchnorm=True (gated on the test).
import argparse

import pytorch_lightning as pl
import torch
import torch.nn as nn
from pytorch_lightning.plugins import DDPPlugin


class Classifier(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU())

    def training_step(self, batch, batch_idx):
        return self.body(batch).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main(args: argparse.Namespace):
    model = Classifier()
    trainer = pl.Trainer(  # expect: batchnorm-unsynced
        gpus=args.gpus,
        strategy=DDPPlugin(find_unused_parameters=False) if args.strategy == "ddp" else args.strategy,
    )
    trainer.fit(model)
