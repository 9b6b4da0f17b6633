import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel


class BasicConv(nn.Module):
    # BatchNorm only when a caller passes norm=True; this network never does
    def __init__(self, cin, cout, kernel_size, stride, bias=True, norm=False, relu=True):
        super(BasicConv, self).__init__()
        layers = [nn.Conv2d(cin, cout, kernel_size, stride=stride, padding=kernel_size // 2, bias=bias)]
        if norm:
            layers.append(nn.BatchNorm2d(cout))
        if relu:
            layers.append(nn.ReLU(inplace=True))
        self.main = nn.Sequential(*layers)

    def forward(self, x):
        return self.main(x)


class Net(nn.Module):
    def __init__(self, c=32):
        super().__init__()
        self.body = nn.Sequential(BasicConv(3, c, 3, 1), BasicConv(c, c, 3, 2, relu=False))

    def forward(self, x):
        return self.body(x)


def train(rank, loader):
    model = DistributedDataParallel(Net().cuda(rank), device_ids=[rank])
    optimizer = torch.optim.Adam(model.parameters())
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.l1_loss(model(x), y).backward()
        optimizer.step()
