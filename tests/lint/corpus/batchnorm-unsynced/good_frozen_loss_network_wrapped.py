# GPEN style: the identity loss holds a BatchNorm backbone it keeps in eval(); it is wrapped in DDP
# beside the generator and discriminator, but no optimizer of the file is built from it.
import torch.nn as nn
from torch import optim


class IDLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.facenet = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))
        self.facenet.eval()

    def forward(self, a, b):
        return (self.facenet(a) - self.facenet(b)).abs().mean()


def main(args, Generator, Discriminator):
    generator = Generator(args.size)
    discriminator = Discriminator(args.size)
    id_loss = IDLoss()
    g_optim = optim.Adam(generator.parameters(), lr=args.lr)
    d_optim = optim.Adam(discriminator.parameters(), lr=args.lr)
    generator = nn.parallel.DistributedDataParallel(generator, device_ids=[args.local_rank])
    discriminator = nn.parallel.DistributedDataParallel(discriminator, device_ids=[args.local_rank])
    id_loss = nn.parallel.DistributedDataParallel(id_loss, device_ids=[args.local_rank])
    return g_optim, d_optim, id_loss
