# zoo: expect=none; requires=lightning
# Lightning Fabric on CPU with the DDP strategy (launched by torchrun); the loss is all-reduced
# with fabric.all_reduce before fabric.print.
import torch
import torch.nn as nn
from lightning.fabric import Fabric
from torch.utils.data import DataLoader, TensorDataset

fabric = Fabric(accelerator="cpu", devices=2, strategy="ddp")
fabric.launch()
fabric.seed_everything(0)
x = torch.randn(384, 8)
y = torch.sin(x.sum(1, keepdim=True))
loader = fabric.setup_dataloaders(DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True))
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
model, optimizer = fabric.setup(model, optimizer)
for epoch in range(1):
    for batch_idx, (inputs, target) in enumerate(loader):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), target)
        fabric.backward(loss)
        optimizer.step()
        synced = fabric.all_reduce(loss.detach(), reduce_op="mean")
        fabric.print(f"Epoch {epoch} batch {batch_idx} loss={synced.item():.4f}")
