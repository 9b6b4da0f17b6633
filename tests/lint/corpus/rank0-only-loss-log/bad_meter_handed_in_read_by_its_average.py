# The epoch loop builds the meters and hands them to the epoch function, which feeds them this
# rank's loss and logs their average under a rank-0 test: ``loss_meter.avg`` is the loss's mean.
import logging as logger

from torch.nn.parallel import DistributedDataParallel as DDP


class AverageMeter:
    def __init__(self):
        self.val = self.avg = self.sum = self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def train_one_epoch(loader, model, optimizer, loss_meter, args):
    for batch_idx, (images, labels) in enumerate(loader):
        loss = model(images, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_meter.update(loss.item(), images.size(0))
        if args.local_rank in [-1, 0] and batch_idx % args.print_freq == 0:
            loss_avg = loss_meter.avg
            logger.info("iter %d loss %.4f" % (batch_idx, loss_avg))  # expect: rank0-only-loss-log


def train(args, loader, model, optimizer):
    model = DDP(model, device_ids=[args.local_rank])
    loss_meter = AverageMeter()
    for epoch in range(args.epochs):
        train_one_epoch(loader, model, optimizer, loss_meter, args)
