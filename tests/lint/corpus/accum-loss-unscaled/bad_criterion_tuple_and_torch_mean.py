# SFA3D style: a criterion object of another file returns the loss first and its terms after;
# the DataParallel branch averages it with ``torch.mean``; the loss is never divided by the
# accumulation count while the step runs every ``subdivisions`` batches.
import torch

from losses import Compute_Loss


def train_one_epoch(loader, model, optimizer, configs):
    criterion = Compute_Loss(device=configs.device)
    model.train()
    for batch_idx, (imgs, targets) in enumerate(loader):
        outputs = model(imgs)
        total_loss, loss_stats = criterion(outputs, targets)
        if not configs.distributed:
            total_loss = torch.mean(total_loss)
        total_loss.backward()  # expect: accum-loss-unscaled
        if (batch_idx + 1) % configs.subdivisions == 0:
            optimizer.step()
            optimizer.zero_grad()
