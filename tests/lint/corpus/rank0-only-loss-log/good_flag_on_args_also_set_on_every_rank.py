# ``args.verbose`` is a rank-0 test in one branch and True on every rank in the other: not a
# rank-0-only flag.
from torch.nn.parallel import DistributedDataParallel as DDP


def train_epoch(model, loader, optimizer, args):
    for i, x in enumerate(loader):
        loss = model(x).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if args.verbose:
            print(f"step {i} loss {loss.item():.4f}")


def main(args, model, loader, optimizer):
    model = DDP(model, device_ids=[args.local_rank])
    if args.log_all_ranks:
        args.verbose = True
    else:
        args.verbose = args.local_rank == 0
    for epoch in range(10):
        train_epoch(model, loader, optimizer, args)
