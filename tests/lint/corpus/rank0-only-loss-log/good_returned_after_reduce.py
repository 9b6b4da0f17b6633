# timm: the epoch's running loss is reduced across ranks (when distributed) just before it is
# returned, so what the caller logs on rank 0 is the global value.
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def reduce_tensor(tensor, n):
    rt = tensor.clone()
    torch.distributed.all_reduce(rt)
    return rt / n


def train_one_epoch(model, loader, optimizer, losses_m, args):
    for x, y in loader:
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses_m.update(loss.item())
    loss_avg = losses_m.avg
    if args.distributed:
        loss_avg = reduce_tensor(torch.tensor([loss_avg]), args.world_size).item()
    return {"loss": loss_avg}


def main(args, model, loader, optimizer, losses_m):
    model = DDP(model)
    for epoch in range(args.epochs):
        train_metrics = train_one_epoch(model, loader, optimizer, losses_m, args)
        if args.rank == 0:
            print(f"epoch {epoch}: {train_metrics}")
