from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm


def main(model, train_dataset, valid_dataset, optimizer, criterion, epochs):
    train_sampler = DistributedSampler(train_dataset)  # expect: set-epoch-missing
    train_loader = DataLoader(train_dataset, sampler=train_sampler, batch_size=8)
    valid_sampler = DistributedSampler(valid_dataset)
    valid_loader = DataLoader(valid_dataset, sampler=valid_sampler, batch_size=8)
    for epoch in range(epochs):
        model.train()
        train_bar = tqdm(train_loader)
        for x, y in train_bar:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        model.eval()
        for x, y in tqdm(valid_loader):
            print(criterion(model(x), y).item())
