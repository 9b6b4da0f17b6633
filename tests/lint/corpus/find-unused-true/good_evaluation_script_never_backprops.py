# CodeReviewer run_test_*.py / AutoFormer evaluation.py style: an evaluation entry script wraps the
# model with find_unused_parameters=True (copied from the training script) but never runs a
# backward: the traversal happens only when a forward records a graph, so it costs nothing here.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(-1) == y).sum().item()
    return correct


def main(model, loader, local_rank):
    dist.init_process_group("nccl")
    model = DDP(model.cuda(), device_ids=[local_rank], find_unused_parameters=True)
    optimizer = torch.optim.AdamW(model.parameters())  # built, never stepped
    print(evaluate(model, loader), optimizer)


if __name__ == "__main__":
    main(None, None, 0)
