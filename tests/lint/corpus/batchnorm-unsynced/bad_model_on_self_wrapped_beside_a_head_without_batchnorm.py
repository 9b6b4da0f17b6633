# ArcFace-style learner: the backbone (BatchNorm) and the margin head (a weight matrix only) are
# kept on ``self`` and wrapped one by one; only the backbone's wrap holds BatchNorm.
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 64, 3), nn.BatchNorm2d(64), nn.PReLU(64))

    def forward(self, x):
        return self.body(x).flatten(1)


class Arcface(nn.Module):
    def __init__(self, embedding_size=512, classnum=1000):
        super().__init__()
        self.kernel = nn.Parameter(torch.randn(classnum, embedding_size))

    def forward(self, emb, label):
        return emb @ self.kernel.t()


class Learner:
    def __init__(self, device):
        self.model = Backbone().to(device)
        self.head = Arcface().to(device)
        self.model = DDP(self.model, device_ids=[device])  # expect: batchnorm-unsynced
        self.head = DDP(self.head, device_ids=[device])
        self.optimizer = torch.optim.SGD([*self.model.parameters(), *self.head.parameters()], lr=0.1)

    def train(self, loader):
        for imgs, labels in loader:
            loss = nn.functional.cross_entropy(self.head(self.model(imgs), labels), labels)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
