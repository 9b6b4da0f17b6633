# semseg-style: the conversion hangs on `args.sync_bn`, read from a YAML config the code does not
# hold (every shipped config sets it True): no default to read, so the conversion is trusted.
import torch
import torch.nn as nn


def main_worker(gpu, args):
    model = nn.Sequential(nn.Conv2d(3, 64, 3), nn.BatchNorm2d(64))
    if args.sync_bn:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    if args.distributed:
        model = torch.nn.parallel.DistributedDataParallel(model.cuda(), device_ids=[gpu])
    return model
