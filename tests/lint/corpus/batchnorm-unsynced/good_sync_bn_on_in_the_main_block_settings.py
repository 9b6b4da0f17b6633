# The settings block under `if __name__ == "__main__":` turns the conversion on: converted on the
# default run.
import torch
import torch.nn as nn

if __name__ == "__main__":
    distributed = True
    sync_bn = True
    local_rank = 0

    model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU())
    model_train = model.train()
    if sync_bn and distributed:
        model_train = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model_train)
    if distributed:
        model_train = model_train.cuda(local_rank)
        model_train = torch.nn.parallel.DistributedDataParallel(model_train, device_ids=[local_rank])
    optimizer = torch.optim.SGD(model_train.parameters(), lr=0.1)
    for x in [torch.zeros(2, 3, 8, 8)]:
        optimizer.zero_grad()
        model_train(x).sum().backward()
        optimizer.step()
