import torch
from torch.utils.data import DataLoader, DistributedSampler


def main(model, train_set, val_set, epochs):
    model = torch.nn.parallel.DistributedDataParallel(model)

    def create_loader(dataset, val_mode=False):
        if val_mode:
            return DataLoader(dataset, batch_size=8, shuffle=False)  # evaluation only
        return DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))

    loader_train = create_loader(train_set, val_mode=False)
    loader_val = create_loader(val_set, val_mode=True)
    for epoch in range(epochs):
        loader_train.sampler.set_epoch(epoch)
        for x in loader_train:
            model(x).sum().backward()
        with torch.no_grad():
            for x in loader_val:
                model(x)
