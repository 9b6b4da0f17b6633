import torch
from torch.utils.data import DataLoader, DistributedSampler


def train_model(model, criterion, optimizer, dataloaders, num_epochs):
    for epoch in range(num_epochs):
        dataloaders["train"].sampler.set_epoch(epoch)
        for phase in ["train", "val"]:
            model.train(phase == "train")
            for inputs, labels in dataloaders[phase]:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    loss = criterion(model(inputs), labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()


def main(model, criterion, optimizer, train_set, val_set):
    train_loader = DataLoader(train_set, batch_size=8, sampler=DistributedSampler(train_set))
    val_loader = DataLoader(val_set, batch_size=8, sampler=DistributedSampler(val_set, shuffle=False))
    train_model(model, criterion, optimizer, {"train": train_loader, "val": val_loader}, num_epochs=25)
