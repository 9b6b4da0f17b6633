# Point-BERT style: each loss is rebound to its all-reduced value before the meter is fed (the raw
# update is the single-process branch), so the rank-0 TensorBoard epoch scalar is the global mean.
import torch.distributed as dist


def reduce_tensor(tensor, world_size):
    rt = tensor.clone()
    dist.all_reduce(rt)
    rt /= world_size
    return rt


def run_epoch(model, loader, optimizer, meter, writer, args, epoch):
    for points in loader:
        loss_1, loss_2 = model(points)
        total = loss_1 + loss_2
        total.backward()
        optimizer.step()
        if args.distributed:
            loss_1 = reduce_tensor(loss_1, args.world_size)
            loss_2 = reduce_tensor(loss_2, args.world_size)
            meter.update([loss_1.item(), loss_2.item()])
        else:
            meter.update([loss_1.item(), loss_2.item()])
    if args.rank == 0:
        writer.add_scalar("loss_1", meter.avg(0), epoch)
