import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class CountingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.front = self.make_layers([64, 64, "M", 128, 128])
        self.back = self.make_layers(["M", 256, 256], in_channels=128)

    def make_layers(self, cfg, in_channels=3, batch_norm=False):
        layers = []
        for v in cfg:
            if v == "M":
                layers += [nn.MaxPool2d(2)]
            else:
                conv = nn.Conv2d(in_channels, v, 3, padding=1)
                if batch_norm:
                    layers += [conv, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                else:
                    layers += [conv, nn.ReLU(inplace=True)]
                in_channels = v
        return nn.Sequential(*layers)

    def forward(self, x):
        return self.back(self.front(x))


def main(rank):
    model = DDP(CountingNet().cuda(rank), device_ids=[rank])
    return model
