from accelerate import Accelerator
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, optimizer, dataset, epochs):
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    accelerator = Accelerator()
    # the prepared loader calls set_epoch on its sampler at the start of every iteration
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(epochs):
        for x, y in loader:
            loss = model(x, y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
