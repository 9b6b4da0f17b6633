import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dataset = TensorDataset(torch.randn(64, 4))
loader = DataLoader(dataset, batch_size=8, shuffle=True)  # expect: sampler-missing
# a module-level iterator: every function of the file draws from it
batches = iter(loader)


def train(model, optimizer, steps):
    model = DDP(model)
    for _ in range(steps):
        (x,) = next(batches)
        loss = model(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
