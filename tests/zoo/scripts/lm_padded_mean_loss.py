# zoo: expect=loss-normalization-variable-tokens
# Variable-length sequences padded per micro-batch; the loss is a per-micro-batch token mean
# (ignore_index=-100) divided by the accumulation count, so short batches weigh as much as long ones.
import random
from contextlib import nullcontext

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

PAD, VOCAB = 0, 64
GRAD_ACC = 4


class GRULM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 48, padding_idx=PAD)
        self.rnn = nn.GRU(48, 48, batch_first=True)
        self.proj = nn.Linear(48, VOCAB)

    def forward(self, ids):
        h, _ = self.rnn(self.embed(ids))
        return self.proj(h)


def batches(rank, n):
    rnd = random.Random(1000 + rank)
    for _ in range(n):
        lengths = [rnd.choice([4, 6, 40, 48]) for _ in range(4)]
        longest = max(lengths)
        ids = torch.full((4, longest), PAD)
        labels = torch.full((4, longest), -100)
        for row, n_tok in enumerate(lengths):
            seq = torch.tensor([rnd.randrange(1, VOCAB) for _ in range(n_tok)])
            ids[row, :n_tok] = seq
            labels[row, : n_tok - 1] = seq[1:]
        yield ids, labels


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(GRULM())
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
for i, (ids, labels) in enumerate(batches(rank, 20 * GRAD_ACC)):
    last = (i + 1) % GRAD_ACC == 0
    with nullcontext() if last else model.no_sync():
        logits = model(ids)
        loss = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), ignore_index=-100)
        (loss / GRAD_ACC).backward()
    if last:
        optimizer.step()
        optimizer.zero_grad()
dist.destroy_process_group()
