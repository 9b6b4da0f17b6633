import torch
from torch.utils.data import DataLoader


def main(model, train_set, epochs):
    model = torch.nn.parallel.DistributedDataParallel(model)

    def create_loader(dataset, plain=True):
        if plain:
            return DataLoader(dataset, batch_size=8, shuffle=True)  # expect: sampler-missing
        return None

    loader_train = create_loader(train_set)
    for epoch in range(epochs):
        for x in loader_train:
            model(x).sum().backward()
