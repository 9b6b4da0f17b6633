import argparse

import timm
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="resnet50")
parser.add_argument("--local-rank", type=int, default=0)
args = parser.parse_args()

model = timm.create_model(args.model, pretrained=False)
model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank])  # expect: batchnorm-unsynced
