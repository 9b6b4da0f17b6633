# zoo: expect=rank0-only-loss-log; requires=lightning
# A LightningModule that logs its training loss with self.log(..., prog_bar=True) and no
# sync_dist: the value shown (and sent to loggers) is each rank's own, rank 0's on screen.
import tempfile

import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=3e-3)


if __name__ == "__main__":
    L.seed_everything(0)
    x = torch.randn(512, 10)
    y = x[:, :3].sum(1, keepdim=True) + 0.2 * torch.randn(512, 1)
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    trainer = L.Trainer(
        accelerator="cpu",
        devices=2,
        strategy="ddp",
        max_steps=24,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        log_every_n_steps=1,
        default_root_dir=tempfile.mkdtemp(prefix="zoo-pl-"),
    )
    trainer.fit(Regressor(), loader)
