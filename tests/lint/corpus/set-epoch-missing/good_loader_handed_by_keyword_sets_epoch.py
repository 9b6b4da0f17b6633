# As the bad snippet, with the sampler's epoch set at the top of each pass.
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def train(model, dataloader, optimizer):
    for x, y in dataloader:
        optimizer.zero_grad()
        model(x, y).backward()
        optimizer.step()


def main(cfg, model, dataset, optimizer):
    model = DDP(model)
    train_sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=train_sampler)
    for e in range(cfg["epoch"]):
        train_sampler.set_epoch(e)
        train(model=model, dataloader=loader, optimizer=optimizer)
