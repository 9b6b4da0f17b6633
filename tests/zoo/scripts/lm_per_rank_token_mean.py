# zoo: expect=loss-norm-per-rank-tokens; allow=loss-normalization-variable-tokens
# Next-token LM on packed-to-the-longest batches whose lengths differ by rank (each rank reads its
# own shard of documents). The loss is F.cross_entropy's mean over the rank's own valid tokens, and
# DDP averages the ranks' gradients: a token on a short-document rank weighs more.
import os
import random

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

PAD, VOCAB = 0, 50


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32, padding_idx=PAD)
        self.mix = nn.Linear(32, 32)
        self.head = nn.Linear(32, VOCAB)

    def forward(self, ids):
        return self.head(torch.tanh(self.mix(self.embed(ids))))


def documents(rank, steps):
    rnd = random.Random(7 + rank)
    for _ in range(steps):
        lengths = [rnd.randint(3, 12) if rnd.random() < 0.5 else rnd.randint(30, 60) for _ in range(4)]
        ids = torch.full((4, max(lengths)), PAD)
        labels = torch.full((4, max(lengths)), -100)
        for row, n in enumerate(lengths):
            seq = torch.tensor([rnd.randrange(1, VOCAB) for _ in range(n)])
            ids[row, :n] = seq
            labels[row, : n - 1] = seq[1:]
        yield ids, labels


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(TinyLM())
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    for ids, labels in documents(dist.get_rank(), 40):
        logits = model(ids)
        # fault: the mean over this rank's valid tokens; the ranks' counts differ every step
        loss = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if dist.get_rank() == 0:
        print(f"final loss {loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
