import torch
from torch.utils.data import DataLoader, RandomSampler


def main(model, dataset, opt, epochs):
    model = torch.nn.parallel.DistributedDataParallel(model)
    torch.manual_seed(opt.seed)  # the same seed on every rank: the same order everywhere
    loader = DataLoader(dataset, batch_size=8, sampler=RandomSampler(dataset))  # expect: sampler-missing
    for epoch in range(epochs):
        for x in loader:
            model(x).sum().backward()
