# LlamaGen-style VQGAN trainer: the tokenizer (GroupNorm) and, apart, the loss module holding a
# BatchNorm discriminator are each wrapped in DDP. Only the wrap of the BatchNorm module is reported.
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 64, 4), nn.BatchNorm2d(64), nn.LeakyReLU(0.2))


def main(device, gpu):
    vq_model = nn.Sequential(nn.Conv2d(3, 64, 3), nn.GroupNorm(32, 64))
    vq_loss = Discriminator()
    vq_model = DDP(vq_model.to(device), device_ids=[gpu])
    vq_loss = DDP(vq_loss.to(device), device_ids=[gpu])  # expect: batchnorm-unsynced
    return vq_model, vq_loss
