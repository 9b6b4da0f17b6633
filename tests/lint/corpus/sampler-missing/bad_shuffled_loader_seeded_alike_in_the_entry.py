import torch
import torch.distributed as dist
from torch.utils.data import DataLoader


def train(model, dataset, epochs):
    model = torch.nn.parallel.DistributedDataParallel(model)
    loader = DataLoader(dataset, batch_size=8, shuffle=True)  # expect: sampler-missing
    for epoch in range(epochs):
        for x in loader:
            model(x).sum().backward()


def main(model, dataset, config):
    dist.init_process_group("nccl")
    seed = config.SEED  # the same seed on every rank: the same order everywhere
    torch.manual_seed(seed)
    train(model, dataset, config.EPOCHS)
