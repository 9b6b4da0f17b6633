# The default model is a ViT (LayerNorm): nothing to sync. apex's conversion counts as SyncBatchNorm.
import argparse

import timm
import torch
from apex.parallel import convert_syncbn_model

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="vit_base_patch16_224")
args = parser.parse_args()

model = timm.create_model(args.model)
model = torch.nn.parallel.DistributedDataParallel(model)

cnn = convert_syncbn_model(timm.create_model("resnet50"))
cnn = torch.nn.parallel.DistributedDataParallel(cnn)
