# zoo: expect=loss-normalization-variable-tokens; allow=loss-norm-per-rank-tokens
# A masked token loss written by hand: per-token cross-entropy (reduction="none"), masked, summed
# and divided by the micro-batch's own mask count, then by the accumulation count. Short and long
# micro-batches weigh the same, so a token's weight depends on its micro-batch's length.
import os
import random
from contextlib import nullcontext

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

PAD, VOCAB, ACCUM = 0, 50, 4


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
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Embedding(VOCAB, 32), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, VOCAB)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for i, (ids, labels) in enumerate(batches(dist.get_rank(), 20 * ACCUM)):
        last = (i + 1) % ACCUM == 0
        with nullcontext() if last else model.no_sync():
            logits = model(ids)
            per_token = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), reduction="none")
            mask = (labels.view(-1) != -100).float()
            loss = (per_token * mask).sum() / mask.sum()  # fault: this micro-batch's own count
            (loss / ACCUM).backward()
        if last:
            opt.step()
            opt.zero_grad()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
