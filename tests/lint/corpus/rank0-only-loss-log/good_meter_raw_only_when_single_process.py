# timm/apex: the meter gets the raw loss only when not distributed, the reduced loss otherwise.
import torch.distributed as dist


def reduce_tensor(t, n):
    rt = t.clone()
    dist.all_reduce(rt)
    return rt / n


def train_one_epoch(args, model, loader, optimizer, losses_m, logger):
    for i, (x, y) in enumerate(loader):
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if not args.distributed:
            losses_m.update(loss.item(), x.size(0))
        if args.distributed:
            reduced_loss = reduce_tensor(loss.data, args.world_size)
            losses_m.update(reduced_loss.item(), x.size(0))
        else:
            reduced_loss = loss.data
        if args.local_rank == 0:
            logger.info(f"loss {losses_m.val:.4f} ({losses_m.avg:.4f}) {reduced_loss.item():.4f}")
