# A ProgressMeter whose loss meter is fed the all-reduced loss, and one displayed on every rank:
# neither is rank 0's local value alone.
import torch.distributed as dist


class AverageMeter:
    def __init__(self, name):
        self.name = name
        self.val = 0.0

    def update(self, val, n=1):
        self.val = val

    def __str__(self):
        return f"{self.name} {self.val:.4f}"


class ProgressMeter:
    def __init__(self, num_batches, meters, prefix=""):
        self.num_batches = num_batches
        self.meters = meters
        self.prefix = prefix

    def display(self, batch):
        entries = [self.prefix + f"[{batch}/{self.num_batches}]"]
        entries += [str(meter) for meter in self.meters]
        print("\t".join(entries))


def train(loader, model, criterion, optimizer, epoch, rank, world_size):
    losses = AverageMeter("Loss")
    progress = ProgressMeter(len(loader), [losses], prefix=f"Epoch: [{epoch}]")
    for i, (images, target) in enumerate(loader):
        loss = criterion(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        losses.update(reduced.item() / world_size, images.size(0))
        if i % 10 == 0 and rank == 0:
            progress.display(i)


def train_every_rank(loader, model, criterion, optimizer, epoch):
    losses = AverageMeter("Loss")
    progress = ProgressMeter(len(loader), [losses], prefix=f"Epoch: [{epoch}]")
    for i, (images, target) in enumerate(loader):
        loss = criterion(model(images), target)
        losses.update(loss.item(), images.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i % 10 == 0:
            progress.display(i)
