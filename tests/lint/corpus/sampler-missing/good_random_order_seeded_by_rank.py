import torch
from torch.utils.data import DataLoader, RandomSampler


def main(model, dataset, opt, epochs):
    model = torch.nn.parallel.DistributedDataParallel(model)
    # each rank seeds the global generator with its rank: its own random order of the data
    torch.manual_seed(opt.global_rank + opt.seed)
    loader = DataLoader(dataset, batch_size=8, sampler=RandomSampler(dataset))
    for epoch in range(epochs):
        for x in loader:
            model(x).sum().backward()
