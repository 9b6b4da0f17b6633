import torch
from torch.utils.data import DataLoader
from torch.utils.data.sampler import RandomSampler


def train(rank, world_size, dataset, model, optimizer):
    torch.distributed.init_process_group("gloo", rank=rank, world_size=world_size)
    model = torch.nn.parallel.DistributedDataParallel(model)
    sampler = RandomSampler(dataset)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler)  # expect: sampler-missing
    for epoch in range(2):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
