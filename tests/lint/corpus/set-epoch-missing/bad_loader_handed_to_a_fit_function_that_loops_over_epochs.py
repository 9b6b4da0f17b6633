from torch.utils.data import DataLoader, DistributedSampler


def fit(model, optimizer, data_loader, epochs):
    for epoch in range(epochs):
        for x, y in data_loader:
            loss = (model(x) - y).pow(2).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()


def main(model, optimizer, dataset):
    sampler = DistributedSampler(dataset)  # expect: set-epoch-missing
    train_loader = DataLoader(dataset, batch_size=16, sampler=sampler)
    fit(model, optimizer, train_loader, epochs=10)
