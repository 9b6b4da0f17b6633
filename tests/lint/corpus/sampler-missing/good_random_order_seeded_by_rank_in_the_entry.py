import torch
import torch.distributed as dist
from torch.utils.data import DataLoader


def train(model, dataset, epochs):
    model = torch.nn.parallel.DistributedDataParallel(model)
    # shuffled from torch's global generator, which the entry seeded by rank: each rank its own order
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    for epoch in range(epochs):
        for x in loader:
            model(x).sum().backward()


def main(model, dataset, config):
    dist.init_process_group("nccl")
    seed = config.SEED + dist.get_rank()
    torch.manual_seed(seed)
    train(model, dataset, config.EPOCHS)
