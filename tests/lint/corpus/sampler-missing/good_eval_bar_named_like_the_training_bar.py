import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, SequentialSampler
from tqdm import tqdm


def fit_one_epoch(model, train_loader, optimizer):
    pbar = tqdm(train_loader)
    for images, targets in pbar:
        loss = model(images, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


@torch.no_grad()
def evaluate(model, val_loader):
    # the validation bar has the training bar's name, in another function: not the loop that trains
    pbar = tqdm(val_loader)
    for images, targets in pbar:
        model(images, targets)


def main(model, train_set, val_set, optimizer, rank):
    model = DDP(model)
    train_loader = DataLoader(train_set, batch_size=8, sampler=DistributedSampler(train_set))
    val_loader = DataLoader(val_set, batch_size=8, sampler=SequentialSampler(val_set))
    for _ in range(10):
        fit_one_epoch(model, train_loader, optimizer)
        if rank == 0:
            evaluate(model, val_loader)
