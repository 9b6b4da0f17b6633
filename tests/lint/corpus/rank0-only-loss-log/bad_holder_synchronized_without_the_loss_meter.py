import time

import torch
import torch.distributed as dist


class AverageMeter:
    def __init__(self, name):
        self.name, self.sum, self.count, self.avg = name, 0.0, 0, 0.0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def synchronize(self):
        t = torch.tensor([self.sum, self.count])
        dist.all_reduce(t)
        self.sum, self.count = t.tolist()
        self.avg = self.sum / self.count


class ProgressMeter:
    def __init__(self, meters):
        self.meters = meters

    def synchronize(self):
        for meter in self.meters:
            meter.synchronize()


def train_epoch(model, loader, optimizer):
    losses = AverageMeter("loss")
    batch_time = AverageMeter("time")
    # only the timing meter is in the holder: the loss meter stays local
    progress = ProgressMeter([batch_time])
    for batch in loader:
        start = time.time()
        loss = model(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss.item())
        batch_time.update(time.time() - start)
    progress.synchronize()
    if dist.get_rank() == 0:
        print("loss", losses.avg)  # expect: rank0-only-loss-log
