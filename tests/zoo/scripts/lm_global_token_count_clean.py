# zoo: expect=none
# The same hand-written masked loss, normalised correctly: the step's valid tokens are summed over
# the ranks (all_reduce of the count) and the summed loss is divided by that global count × world
# (DDP averages the gradients), so every token weighs the same whatever its batch's length.
import os
import random

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

PAD, VOCAB = 0, 50


def batches(rank, n):
    rnd = random.Random(100 + rank)
    for _ in range(n):
        lengths = [rnd.choice([4, 6, 36, 44]) for _ in range(4)]
        ids = torch.full((4, max(lengths)), PAD)
        labels = torch.full((4, max(lengths)), -100)
        for row, k in enumerate(lengths):
            seq = torch.tensor([rnd.randrange(1, VOCAB) for _ in range(k)])
            ids[row, :k] = seq
            labels[row, : k - 1] = seq[1:]
        yield ids, labels


def main():
    dist.init_process_group("gloo")
    world = dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Embedding(VOCAB, 32), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, VOCAB)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for ids, labels in batches(dist.get_rank(), 40):
        logits = model(ids)
        per_token = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), reduction="none")
        mask = (labels.view(-1) != -100).float()
        count = mask.sum().detach()
        dist.all_reduce(count)
        loss = (per_token * mask).sum() * world / count
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
