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
    loss_mts = {"loss": AverageMeter("loss")}
    # the holder is built from the loss meters: synchronizing it all-reduces them
    progress = ProgressMeter([*loss_mts.values()])
    for batch in loader:
        loss = model(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_mts["loss"].update(loss.item())
    progress.synchronize()
    return {k: v.avg for k, v in loss_mts.items()}


def run(model, loader, optimizer):
    for _ in range(10):
        outs = train_epoch(model, loader, optimizer)
        if dist.get_rank() == 0:
            print(outs)
