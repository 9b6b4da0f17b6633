# `pbar` over the training loader is bound in `train`, but the loop that an epoch loop repeats
# iterates another function's `pbar` (over the validation loader, no sampler): another bar.
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm


def train(model, optimizer, dataset):
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    pbar = tqdm(loader)
    for x in pbar:
        optimizer.zero_grad()
        model(x).mean().backward()
        optimizer.step()


def validate(model, val_loader, epochs):
    for epoch in range(epochs):
        pbar = val_loader
        for x in pbar:
            model(x)


def main(model, optimizer, dataset, val_loader):
    model = DDP(model)
    train(model, optimizer, dataset)
    validate(model, val_loader, 3)
