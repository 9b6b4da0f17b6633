import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def main(model, raw, preprocess, epochs):
    dist.init_process_group("nccl")
    if dist.get_rank() == 0:
        # a one-off pass to preprocess the data on rank 0; nothing trains on it
        data_loader = DataLoader(raw, num_workers=8)
        items = [preprocess(data_loader)]
        del data_loader
    else:
        items = [None]
    dist.broadcast_object_list(items, src=0)
    dataset = items[0]
    data_loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    model = torch.nn.parallel.DistributedDataParallel(model)
    for epoch in range(epochs):
        data_loader.sampler.set_epoch(epoch)
        for x in data_loader:
            model(x).sum().backward()
