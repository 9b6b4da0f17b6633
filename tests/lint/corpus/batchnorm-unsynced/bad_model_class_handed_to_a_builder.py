# MoCo: a torchvision model class picked by name (resnet50 by default) is handed to a builder that
# instantiates it; the result is wrapped in DDP with no SyncBatchNorm.
import torch
import torchvision.models as models


class MoCo(torch.nn.Module):
    def __init__(self, base_encoder, dim=128):
        super().__init__()
        self.encoder_q = base_encoder(num_classes=dim)
        self.encoder_k = base_encoder(num_classes=dim)


def main(args):
    model = MoCo(models.__dict__[args.arch], args.moco_dim)
    model = torch.nn.parallel.DistributedDataParallel(model)  # expect: batchnorm-unsynced
    return model
