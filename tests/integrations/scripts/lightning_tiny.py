"""A Lightning run the way users write one: a LightningModule that logs `train_loss`.

Usage: python lightning_tiny.py OUT_DIR [--devices N]   (CPU; N > 1 uses the ddp strategy, gloo)
"""

import argparse

import lightning as L
import torch

from ddp_doctor.integrations.lightning import DdpDoctorCallback

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--devices", type=int, default=1)
parser.add_argument("--steps", type=int, default=30)
args = parser.parse_args()


class Regression(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=1e-2)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 5))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


torch.manual_seed(0)
x = torch.randn(512, 8)
y = x.sum(dim=1, keepdim=True) + 0.1 * torch.randn(512, 1)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8, shuffle=True)
trainer = L.Trainer(
    default_root_dir=args.out,
    max_steps=args.steps,
    accelerator="cpu",
    devices=args.devices,
    strategy="ddp" if args.devices > 1 else "auto",
    gradient_clip_val=1.0,
    log_every_n_steps=1,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    callbacks=[DdpDoctorCallback(every=10)],
)
trainer.fit(Regression(), data)
