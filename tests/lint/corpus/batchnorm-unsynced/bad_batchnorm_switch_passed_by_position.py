import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def conv_block(cin, cout, use_bn=False):
    # BatchNorm only when use_bn is passed: here it is, by position
    layers = [nn.Conv1d(cin, cout, 3, padding=1)]
    if use_bn:
        layers.append(nn.BatchNorm1d(cout))
    return nn.Sequential(*layers, nn.ReLU())


def train(rank, loader):
    model = nn.Sequential(conv_block(8, 16, True), conv_block(16, 16)).cuda(rank)
    model = DistributedDataParallel(model, device_ids=[rank])  # expect: batchnorm-unsynced
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
