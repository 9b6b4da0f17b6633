import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, RandomSampler


class SyntheticStream(torch.utils.data.IterableDataset):
    def __init__(self, seed):
        self.seed = seed

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed)
        while True:
            yield torch.randn(8, generator=g)


def main(model, rank, opt):
    model = DDP(model)
    loader = DataLoader(SyntheticStream(seed=1000 + rank), batch_size=4)
    for batch in loader:
        model(batch).sum().backward()
        opt.step()
        opt.zero_grad()
