from torch.utils.data import DataLoader, DistributedSampler


def fit(model, optimizer, data_loader, epochs):
    for epoch in range(epochs):
        data_loader.sampler.set_epoch(epoch)
        for x, y in data_loader:
            loss = (model(x) - y).pow(2).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()


def main(model, optimizer, dataset):
    train_loader = DataLoader(dataset, batch_size=16, sampler=DistributedSampler(dataset))
    fit(model, optimizer, train_loader, epochs=10)
