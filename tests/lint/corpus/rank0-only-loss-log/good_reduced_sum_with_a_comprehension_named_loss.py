# maskrcnn-benchmark's trainer: the meters are fed the sum over the reduced dict; the generator's own
# variable is named ``loss`` like a term of the training loss, but a comprehension is its own scope.
import datetime

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def reduce_loss_dict(loss_dict):
    names = sorted(loss_dict)
    all_losses = torch.stack([loss_dict[k] for k in names])
    dist.reduce(all_losses, dst=0)
    return {k: v for k, v in zip(names, all_losses)}


def do_train(model, loader, optimizer, meters, max_iter):
    model = DDP(model)
    for iteration, (images, targets) in enumerate(loader):
        loss_dict = model(images, targets)
        losses = sum(loss for loss in loss_dict.values())
        loss_dict_reduced = reduce_loss_dict(loss_dict)
        losses_reduced = sum(loss for loss in loss_dict_reduced.values())
        meters.update(loss=losses_reduced, **loss_dict_reduced)
        optimizer.zero_grad()
        losses.backward()
        optimizer.step()
        meters.update(time=1.0)
        eta_seconds = meters.time.global_avg * (max_iter - iteration)
        eta_string = str(datetime.timedelta(seconds=int(eta_seconds)))
        if dist.get_rank() == 0:
            print("eta {} {}".format(eta_string, str(meters)))
