# The backbone is put in eval(), but it is handed whole into the wrapped model, whose train()
# switches its BatchNorm back to batch statistics.
import torch
import torch.nn as nn
import torchvision


class Probe(nn.Module):
    def __init__(self, backbone, dim):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(dim, 10)


def main(gpu, loader):
    backbone = torchvision.models.resnet50()
    backbone.eval()
    model = Probe(backbone, 2048).cuda()
    model = nn.parallel.DistributedDataParallel(model, device_ids=[gpu])  # expect: batchnorm-unsynced
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    model.train()
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
