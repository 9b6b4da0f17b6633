# zoo: expect=rank0-only-loss-log; requires=tensorboard
# TensorBoard logging from rank 0 only: add_scalar("train/loss", loss.item()) with rank 0's own
# loss — the curve in TensorBoard is one rank's, not the global loss.
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.tensorboard import SummaryWriter

dist.init_process_group("gloo")
rank = dist.get_rank()
writer = (
    SummaryWriter(log_dir=os.path.join(tempfile.gettempdir(), f"zoo-tb-{os.getpid()}")) if rank == 0 else None
)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(rank)
W = torch.randn(16, 4, generator=torch.Generator().manual_seed(0))
for global_step in range(30):
    inputs = torch.randn(8, 16, generator=g)
    labels = (inputs @ W).argmax(1)
    loss = nn.functional.cross_entropy(model(inputs), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if writer is not None:
        writer.add_scalar("train/loss", loss.item(), global_step)
if writer is not None:
    writer.close()
dist.destroy_process_group()
