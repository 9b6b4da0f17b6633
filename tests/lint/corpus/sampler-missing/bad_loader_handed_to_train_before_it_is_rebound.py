import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(train_queue, model, criterion, optimizer):
    for x, y in train_queue:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main(args, model, criterion, optimizer, train_data, extra_data):
    dist.init_process_group("nccl")
    model = DDP(model.cuda())
    train_queue = torch.utils.data.DataLoader(train_data, batch_size=64, shuffle=True)  # expect: sampler-missing
    train(train_queue, model, criterion, optimizer)  # a warm-up pass on the unsampled loader
    train_sampler = torch.utils.data.distributed.DistributedSampler(extra_data)
    train_queue = torch.utils.data.DataLoader(extra_data, batch_size=64, sampler=train_sampler)
    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        train(train_queue, model, criterion, optimizer)
