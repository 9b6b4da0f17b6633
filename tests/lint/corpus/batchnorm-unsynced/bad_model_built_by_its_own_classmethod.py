# DRAGON-style: the trained model is made by a classmethod constructor (`cls(config, ...)` inside a
# `from_pretrained` override), its GNN encoder holding BatchNorm1d; wrapped in DDP, never converted.
import torch
import torch.nn as nn


class GNNEncoder(nn.Module):
    def __init__(self, config, dim=64):
        super().__init__()
        self.edge_encoder = nn.Sequential(nn.Linear(dim, dim), nn.BatchNorm1d(dim), nn.ReLU())

    @classmethod
    def from_pretrained(cls, path, **kwargs):
        model = cls({"path": path}, **kwargs)
        return model


def train(args, loader, optimizer):
    model = GNNEncoder.from_pretrained(args.model_path, dim=128).cuda()
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank])  # expect: batchnorm-unsynced
    for x in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
