# Old Hugging Face example scripts: the sampler is chosen by `local_rank`; whenever training is
# distributed it is a shuffling DistributedSampler, and no set_epoch is ever called. (No autofix:
# on the other branch the sampler is a RandomSampler, which has no set_epoch.)
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler
from torch.nn.parallel import DistributedDataParallel as DDP


def train(args, train_dataset, second_dataset, model, optimizer):
    model = DDP(model)
    train_sampler = RandomSampler(train_dataset) if args.local_rank == -1 else DistributedSampler(train_dataset)  # expect: set-epoch-missing
    train_loader = DataLoader(train_dataset, sampler=train_sampler, batch_size=8)
    S = RandomSampler if args.local_rank == -1 else DistributedSampler
    second_loader = DataLoader(second_dataset, sampler=S(second_dataset), batch_size=8)  # expect: set-epoch-missing
    for epoch in range(args.epochs):
        for x, y in train_loader:
            model(x, y).backward()
            optimizer.step()
        for x, y in second_loader:
            model(x, y).backward()
            optimizer.step()
