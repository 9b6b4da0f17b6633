import torch
import torchvision


def build(local_rank):
    model = torchvision.models.resnet50()
    ddp_model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])  # expect: batchnorm-unsynced
    return ddp_model
