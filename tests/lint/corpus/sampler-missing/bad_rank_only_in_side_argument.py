# The rank reaches the dataset's construction only through a side argument (the device), never
# through the data it is built from: every rank still iterates the whole dataset.
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader


def main(model, raw, Wrapper, local_rank):
    device = torch.device(f"cuda:{local_rank}")
    model = DDP(model.to(device), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters())
    ds = raw.select(range(100, len(raw)))
    train_dataset = Wrapper(ds, device)
    loader = DataLoader(train_dataset, batch_size=8, shuffle=True)  # expect: sampler-missing
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
