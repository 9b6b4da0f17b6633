"""A Fabric loop in the style of Lightning's `examples/fabric` scripts: lightning imported before
torch, `fabric.clip_gradients(clip_val=...)` (clipping by value) every step, `fabric.log`; no
probe code. argv[1]: number of devices (Fabric launches the other ranks itself).
"""

import sys

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

CLIP_VAL = 0.05


def main(devices: int) -> None:
    fabric = L.Fabric(accelerator="cpu", devices=devices, strategy="ddp" if devices > 1 else "auto")
    fabric.launch()
    fabric.seed_everything(0)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(256, 8, generator=gen)
    data = TensorDataset(x, x.sum(dim=1, keepdim=True))
    loader = fabric.setup_dataloaders(DataLoader(data, batch_size=8, shuffle=True))
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    model, optimizer = fabric.setup(model, optimizer)
    for step, (inputs, target) in enumerate(loader):
        if step == 12:
            break
        loss = F.mse_loss(model(inputs), target)
        optimizer.zero_grad()
        fabric.backward(loss)
        fabric.clip_gradients(model, optimizer, clip_val=CLIP_VAL)
        optimizer.step()
        fabric.log("train_loss", loss)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
