# A torchrun DDP script whose loader takes its settings from a dict of known keys: none of them is
# a sampler, so every rank draws the whole training split.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader


def main(model, train_set, local_rank, epochs):
    dist.init_process_group(backend="nccl")
    loader_args = dict(batch_size=8, num_workers=1, pin_memory=True)
    train_loader = DataLoader(train_set, shuffle=True, **loader_args)  # expect: sampler-missing
    model = DDP(model, device_ids=[local_rank])
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(epochs):
        for x, y in train_loader:
            loss = (model(x) - y).abs().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
