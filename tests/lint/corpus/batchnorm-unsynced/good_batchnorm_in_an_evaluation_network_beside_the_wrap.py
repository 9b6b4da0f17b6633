# LatentSync: a BatchNorm network built only to score samples, beside the UNet that is wrapped.
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class SyncNetEval(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 64, 3), nn.BatchNorm2d(64), nn.ReLU())


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(4, 64, 3), nn.GroupNorm(8, 64), nn.SiLU())


def main(local_rank, loader):
    syncnet_eval_model = SyncNetEval().to(local_rank)
    unet = UNet().to(local_rank)
    unet = DDP(unet, device_ids=[local_rank])
    optimizer = torch.optim.AdamW(unet.parameters())
    for x in loader:
        loss = unet(x).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return syncnet_eval_model
