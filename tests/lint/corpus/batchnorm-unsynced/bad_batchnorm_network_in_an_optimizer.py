# The BatchNorm network is wrapped beside another model and one optimizer is built from both
# (through a list assigned first): it trains, so its BatchNorm statistics are per rank.
import torch.nn as nn
from torch import optim


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))


def main(args, Decoder):
    encoder = Encoder()
    decoder = Decoder(args.size)
    params = list(encoder.parameters()) + list(decoder.parameters())
    opt = optim.Adam(params, lr=args.lr)
    decoder = nn.parallel.DistributedDataParallel(decoder, device_ids=[args.local_rank])
    encoder = nn.parallel.DistributedDataParallel(encoder, device_ids=[args.local_rank])  # expect: batchnorm-unsynced
    return opt, encoder, decoder
