import torch
from torch.utils.data import DataLoader, DistributedSampler


def train_model(model, criterion, optimizer, dataloaders, num_epochs):
    for epoch in range(num_epochs):
        for phase in ["train", "val"]:
            model.train(phase == "train")
            batches = dataloaders[phase]
            for inputs, labels in batches:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    loss = criterion(model(inputs), labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()


def main(model, criterion, optimizer, train_set, val_set):
    train_sampler = DistributedSampler(train_set, shuffle=True)  # expect: set-epoch-missing
    val_sampler = DistributedSampler(val_set, shuffle=False)
    train_loader = DataLoader(train_set, batch_size=8, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=8, sampler=val_sampler)
    loaders = {"train": train_loader, "val": val_loader}
    train_model(model, criterion, optimizer, loaders, num_epochs=25)
