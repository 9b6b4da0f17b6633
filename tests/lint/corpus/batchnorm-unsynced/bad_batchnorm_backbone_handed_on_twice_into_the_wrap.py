import torch
import torch.nn as nn
import torchvision


class Encoder(nn.Module):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone


class Model(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder


def main(gpu, loader):
    backbone = torchvision.models.resnet50()
    encoder = Encoder(backbone)
    model = Model(encoder).cuda()
    model = nn.parallel.DistributedDataParallel(model, device_ids=[gpu])  # expect: batchnorm-unsynced
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
