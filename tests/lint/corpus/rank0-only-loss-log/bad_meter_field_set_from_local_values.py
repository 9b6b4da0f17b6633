import torch.distributed as dist


class AverageMeter:
    def __init__(self):
        self.val = self.sum = self.count = self.avg = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def train_epoch(model, loader, criterion, optimizer):
    losses = AverageMeter()
    for inputs, targets in loader:
        loss = criterion(model(inputs), targets)
        losses.update(loss.item(), inputs.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    # the field is recomputed from the meter's own (local) sums: nothing combined across ranks
    losses.avg = losses.sum / max(losses.count, 1)
    if dist.get_rank() == 0:
        print("epoch loss", losses.avg)  # expect: rank0-only-loss-log
