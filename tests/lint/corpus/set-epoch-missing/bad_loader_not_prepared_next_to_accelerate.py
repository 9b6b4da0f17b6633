from accelerate import Accelerator
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, optimizer, dataset, epochs):
    sampler = DistributedSampler(dataset)  # expect: set-epoch-missing
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    accelerator = Accelerator()
    model, optimizer = accelerator.prepare(model, optimizer)  # the loader is not prepared
    for epoch in range(epochs):
        for x, y in loader:
            loss = model(x, y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
