# The epoch loop's target is a bare `e`, its range names the epochs (`range(cfg["epoch"])`), and the
# loader reaches the training function by keyword: every pass re-iterates the same permutation.
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def train(model, dataloader, optimizer):
    for x, y in dataloader:
        optimizer.zero_grad()
        model(x, y).backward()
        optimizer.step()


def main(cfg, model, dataset, optimizer):
    model = DDP(model)
    train_sampler = DistributedSampler(dataset)  # expect: set-epoch-missing
    loader = DataLoader(dataset, batch_size=8, sampler=train_sampler)
    for e in range(cfg["epoch"]):
        train(model=model, dataloader=loader, optimizer=optimizer)
