# wenet/webdataset: ``DataLoader(dataset, batch_size=None)`` turns automatic batching off; the
# dataset is an iterable pipeline that yields whole batches and splits the data by rank itself.
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, dataset, optimizer):
    model = DDP(model)
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=4)
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
