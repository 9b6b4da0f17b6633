import torch
import torch.distributed as dist


class AverageMeter:
    def __init__(self):
        self.val = self.sum = self.count = self.avg = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def train_epoch(model, loader, criterion, optimizer, distributed):
    losses = AverageMeter()
    for inputs, targets in loader:
        loss = criterion(model(inputs), targets)
        losses.update(loss.item(), inputs.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if distributed:
        loss_sum = torch.tensor([losses.sum])
        loss_count = torch.tensor([losses.count])
        dist.all_reduce(loss_sum, op=dist.ReduceOp.SUM)
        dist.all_reduce(loss_count, op=dist.ReduceOp.SUM)
        # the field the log reads is set from the sums over every rank
        losses.avg = loss_sum.item() / loss_count.item()
    if dist.get_rank() == 0:
        print("epoch loss", losses.avg)

