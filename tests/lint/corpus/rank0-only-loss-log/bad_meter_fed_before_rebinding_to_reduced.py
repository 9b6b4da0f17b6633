# The meter is fed before the losses are rebound to their all-reduced values: it holds rank 0's own
# losses, and the rank-0 epoch scalar is rank 0's mean.
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
        meter.update([loss_1.item(), loss_2.item()])
        loss_1 = reduce_tensor(loss_1, args.world_size)
        loss_2 = reduce_tensor(loss_2, args.world_size)
    if args.rank == 0:
        writer.add_scalar("loss_1", meter.avg(0), epoch)  # expect: rank0-only-loss-log
