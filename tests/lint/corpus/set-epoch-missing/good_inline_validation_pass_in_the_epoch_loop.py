from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm


def main(model, train_dataset, valid_dataset, optimizer, criterion, epochs):
    train_sampler = DistributedSampler(train_dataset)
    train_loader = DataLoader(train_dataset, sampler=train_sampler, batch_size=8)
    valid_sampler = DistributedSampler(valid_dataset)  # its order never reaches the weights
    valid_loader = DataLoader(valid_dataset, sampler=valid_sampler, batch_size=8)
    for epoch in range(epochs):
        train_sampler.set_epoch(epoch)
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        model.eval()
        valid_bar = tqdm(valid_loader)
        losses = 0.0
        for x, y in valid_bar:
            losses += criterion(model(x), y).item()
        print(losses / len(valid_loader))
