# zoo: expect=none
# Epoch-based training that logs nothing per step (only a final message): a correct setup.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def train(epochs=3):
    dist.init_process_group("gloo")
    torch.manual_seed(123)
    inputs = torch.randn(192, 5)
    targets = inputs @ torch.tensor([[1.0], [-2.0], [0.5], [0.0], [3.0]])
    dataset = TensorDataset(inputs, targets)
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=12, sampler=sampler)
    model = DistributedDataParallel(nn.Linear(5, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for features, target in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(features), target).backward()
            optimizer.step()
    if dist.get_rank() == 0:
        print("saved nothing; training complete")
    dist.destroy_process_group()


if __name__ == "__main__":
    train()
