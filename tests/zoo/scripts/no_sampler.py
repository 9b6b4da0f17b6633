# zoo: expect=sampler-missing
# DataLoader with shuffle=True and the same seed on every rank, no DistributedSampler: every rank
# trains on the same batches, so 2 GPUs do the work of one.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo")
torch.manual_seed(0)
X = torch.randn(400, 10)
Y = X.sum(1, keepdim=True).sin()
loader = DataLoader(TensorDataset(X, Y), batch_size=10, shuffle=True)
model = DDP(nn.Sequential(nn.Linear(10, 40), nn.ReLU(), nn.Linear(40, 1)))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(1):
    for batch_idx, (data, target) in enumerate(loader):
        optimizer.zero_grad()
        output = model(data)
        loss = nn.functional.mse_loss(output, target)
        loss.backward()
        optimizer.step()
        if dist.get_rank() == 0 and batch_idx % 10 == 0:
            print(
                f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(loader.dataset)}]\tLoss: {loss.item():.6f}"
            )
dist.destroy_process_group()
