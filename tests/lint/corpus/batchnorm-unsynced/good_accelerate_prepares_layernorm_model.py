# accelerate prepares a LayerNorm model, the loader and the optimizer; the BatchNorm network is a
# frozen feature extractor that is never prepared (no DDP, no statistics to sync).
import torch
import torch.nn as nn
from accelerate import Accelerator


def main(train_loader):
    accelerator = Accelerator()
    features = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)).eval()
    model = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8))
    optimizer = torch.optim.AdamW(model.parameters())
    model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)
    return features, model, optimizer, train_loader
