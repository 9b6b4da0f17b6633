# ImageNet-example style: a ProgressMeter built from AverageMeters prints them in ``display``; the
# loss meter holds this rank's own loss values, and only rank 0 prints (a rank-0 test, or ``print``
# replaced by a no-op on the other ranks).
import builtins

import torch
import torch.distributed as dist


class AverageMeter:
    def __init__(self, name, fmt=":f"):
        self.name, self.fmt = name, fmt
        self.val = self.avg = self.sum = self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        return f"{self.name} {self.val:.4f} ({self.avg:.4f})"


class ProgressMeter:
    def __init__(self, num_batches, meters, prefix=""):
        self.num_batches = num_batches
        self.meters = meters
        self.prefix = prefix

    def display(self, batch):
        entries = [self.prefix + f"[{batch}/{self.num_batches}]"]
        entries += [str(meter) for meter in self.meters]
        print("\t".join(entries))


def train(loader, model, criterion, optimizer, epoch, rank):
    batch_time = AverageMeter("Time", ":6.3f")
    losses = AverageMeter("Loss", ":.4e")
    progress = ProgressMeter(len(loader), [batch_time, losses], prefix=f"Epoch: [{epoch}]")
    for i, (images, target) in enumerate(loader):
        loss = criterion(model(images), target)
        losses.update(loss.item(), images.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i % 10 == 0 and rank == 0:
            progress.display(i)  # expect: rank0-only-loss-log


def train_silenced(loader, model, criterion, optimizer, epoch):
    losses = AverageMeter("Loss", ":.4e")
    progress = ProgressMeter(len(loader), [losses], prefix=f"Epoch: [{epoch}]")
    for i, (images, target) in enumerate(loader):
        loss = criterion(model(images), target)
        losses.update(loss.item(), images.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i % 10 == 0:
            progress.display(i)  # expect: rank0-only-loss-log


def main_worker(gpu, args, loader, model, criterion, optimizer):
    if args.multiprocessing_distributed and gpu != 0:

        def print_pass(*args):
            pass

        builtins.print = print_pass
    dist.init_process_group("nccl", rank=gpu, world_size=args.world_size)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[gpu])
    for epoch in range(args.epochs):
        train(loader, model, criterion, optimizer, epoch, gpu)
        train_silenced(loader, model, criterion, optimizer, epoch)
