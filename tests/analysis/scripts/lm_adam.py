"""A small transformer LM trained the way a forum user would: plain DDP, Adam, no warmup, rank 0
prints its loss. `python lm_adam.py LR` (the lr-too-high run uses 0.3, a healthy one 3e-3).
Fake data: token sequences from a fixed random bigram table, so the loss can fall."""

import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB, DIM, SEQ, BATCH, STEPS, ACCUM = 300, 64, 32, 8, 48, 2
lr = float(sys.argv[1]) if len(sys.argv) > 1 else 0.3


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_emb = nn.Embedding(VOCAB, DIM)
        self.pos_emb = nn.Embedding(SEQ, DIM)
        layer = nn.TransformerEncoderLayer(DIM, 4, 4 * DIM, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.ln_f = nn.LayerNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)
        self.lm_head.weight = self.tok_emb.weight  # weight tying, as in GPT-2
        for emb in (self.tok_emb, self.pos_emb):
            nn.init.normal_(emb.weight, std=0.02)

    def forward(self, idx):
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1]))
        mask = nn.Transformer.generate_square_subsequent_mask(idx.shape[1])
        return self.lm_head(self.ln_f(self.blocks(x, mask=mask, is_causal=True)))


def batches(rank):
    g = torch.Generator().manual_seed(1234)
    table = torch.softmax(3 * torch.randn(VOCAB, VOCAB, generator=g), dim=-1)
    g.manual_seed(100 + rank)
    while True:
        seq = torch.empty(BATCH, SEQ + 1, dtype=torch.long)
        seq[:, 0] = torch.randint(0, VOCAB, (BATCH,), generator=g)
        for t in range(SEQ):
            seq[:, t + 1] = torch.multinomial(table[seq[:, t]], 1, generator=g).squeeze(1)
        yield seq[:, :-1], seq[:, 1:]


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(TinyLM())
opt = torch.optim.Adam(model.parameters(), lr=lr)
data = batches(rank)
for step in range(STEPS):
    for micro in range(ACCUM):
        x, y = next(data)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1)) / ACCUM
        loss.backward()
    opt.step()
    opt.zero_grad()
    if rank == 0:
        print(f"step {step} loss {loss.item() * ACCUM:.4f}")
dist.destroy_process_group()
