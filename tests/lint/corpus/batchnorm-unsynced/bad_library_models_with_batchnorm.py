# Models from libraries whose default networks hold BatchNorm (efficientnet_pytorch,
# segmentation_models_pytorch), wrapped in DDP without conversion.
import segmentation_models_pytorch as smp
import torch
from efficientnet_pytorch import EfficientNet
from torch.nn.parallel import DistributedDataParallel as DDP


def build(args, device):
    backbone = EfficientNet.from_pretrained("efficientnet-b0")
    backbone = DDP(backbone.to(device), device_ids=[device])  # expect: batchnorm-unsynced
    seg = smp.Unet(encoder_name="resnet34", classes=args.classes)
    seg = DDP(seg.to(device), device_ids=[device])  # expect: batchnorm-unsynced
    optimizer = torch.optim.Adam([*backbone.parameters(), *seg.parameters()])
    return backbone, seg, optimizer


def train(backbone, seg, optimizer, loader):
    for x, y in loader:
        loss = (backbone(x).mean() + seg(x).mean()) - y.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
