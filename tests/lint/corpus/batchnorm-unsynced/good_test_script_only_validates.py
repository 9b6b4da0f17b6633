# CDARTS test.py / TinyViT save_logits.py style: a test entry script wraps a BatchNorm model in DDP
# and only runs it in eval() mode: BatchNorm normalises with its running statistics, so unsynced
# per-rank batch statistics never enter the computation.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def validate(loader, model):
    model.eval()
    with torch.no_grad():
        return sum((model(x).argmax(-1) == y).sum().item() for x, y in loader)


def main(loader, local_rank):
    dist.init_process_group("nccl")
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Flatten(), nn.LazyLinear(10)).cuda()
    model = DDP(model, device_ids=[local_rank])
    print(validate(loader, model))


if __name__ == "__main__":
    main(None, 0)
