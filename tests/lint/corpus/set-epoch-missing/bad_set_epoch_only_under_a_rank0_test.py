# InSPyReNet style: the epoch loop calls ``set_epoch`` only inside the rank-0 progress block, so
# every other rank keeps epoch 0's order for the whole run.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(args, model, dataset, optimizer):
    dist.init_process_group("nccl")
    model = DDP(model, device_ids=[args.local_rank])
    train_sampler = DistributedSampler(dataset, shuffle=True)  # expect: set-epoch-missing
    loader = DataLoader(dataset, batch_size=8, sampler=train_sampler)
    for epoch in range(args.epochs):
        if args.local_rank <= 0 and args.verbose is True:
            print(f"epoch {epoch}")
            train_sampler.set_epoch(epoch)
        for x in loader:
            loss = model(x).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    torch.save(model.state_dict(), "model.pt")
