import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader


def main(model, dataset, rank):
    model = DDP(model, device_ids=[rank])
    optimizer = torch.optim.AdamW(model.parameters())
    loader = DataLoader(dataset, batch_size=32, shuffle=True)  # expect: sampler-missing
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
