# Values that are global because only one process runs where they are read:
# - Cream/timm style: `if cfg.NUM_GPU > 1:` reduces the loss, the else (one process) keeps it raw;
# - HF-example style: a log under `args.local_rank == -1` (no launcher: the single-process run).
import logging

import torch.distributed as dist

logger = logging.getLogger(__name__)


def reduce_tensor(tensor, n):
    rt = tensor.clone()
    dist.all_reduce(rt, op=dist.ReduceOp.SUM)
    return rt / n


def train(model, loader, optimizer, cfg, args, losses_m, writer):
    tr_loss = 0.0
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        if cfg.NUM_GPU > 1:
            reduced_loss = reduce_tensor(loss.data, cfg.NUM_GPU)
        else:
            reduced_loss = loss.data
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        tr_loss += loss.item()
        losses_m.update(reduced_loss.item(), x.size(0))
        if args.local_rank in [-1, 0]:
            writer.add_scalar("loss", losses_m.avg, step)
            if args.local_rank == -1 and args.evaluate_during_training:
                logger.info("loss %s", str(tr_loss))
