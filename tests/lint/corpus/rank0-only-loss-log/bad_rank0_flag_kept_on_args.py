# A rank-0 flag set on the argument namespace (``args.on_main_process``) in main and tested in the
# epoch function it is handed to.
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train_epoch(model, loader, optimizer, args):
    for i, x in enumerate(loader):
        loss = -model.log_prob(x).mean(0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if args.on_main_process:
            print(f"step {i} loss {loss.item():.4f}")  # expect: rank0-only-loss-log


def main(args, model, loader, optimizer):
    args.distributed = args.world_size > 1
    if args.distributed:
        dist.init_process_group("nccl")
        model = DDP(model, device_ids=[args.local_rank])
    args.on_main_process = (args.distributed and args.local_rank == 0) or not args.distributed
    for epoch in range(10):
        train_epoch(model, loader, optimizer, args)
