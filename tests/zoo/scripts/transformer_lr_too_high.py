# zoo: expect=update-ratio-high|loss-spike|loss-divergence|lr-too-high|loss-unstable; allow=warmup-short
# A small transformer LM trained with Adam at lr 0.3 and no warmup: the loss jumps up and keeps
# oscillating. Everything else is correct (sampler, all-reduced logging).
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

V, T, D = 128, 32, 64


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.pos = nn.Parameter(torch.zeros(T, D))
        enc = nn.TransformerEncoderLayer(D, 4, 4 * D, dropout=0.0, batch_first=True)
        self.body = nn.TransformerEncoder(enc, num_layers=2)
        self.out = nn.Linear(D, V)

    def forward(self, tokens):
        h = self.emb(tokens) + self.pos[: tokens.shape[1]]
        causal = torch.triu(torch.full((tokens.shape[1],) * 2, float("-inf")), diagonal=1)
        return self.out(self.body(h, mask=causal))


dist.init_process_group("gloo")
torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
# a learnable toy language: each token is the previous one plus a small random step
steps = torch.randint(-2, 3, (768, T + 1), generator=g)
seqs = torch.cumsum(steps, dim=1) % V
dataset = TensorDataset(seqs[:, :-1], seqs[:, 1:])
sampler = DistributedSampler(dataset, shuffle=True, seed=0)
loader = DataLoader(dataset, batch_size=8, sampler=sampler)
model = DDP(LM())
opt = torch.optim.Adam(model.parameters(), lr=0.3)

step = 0
for epoch in range(1):
    sampler.set_epoch(epoch)
    for inp, tgt in loader:
        logits = model(inp)
        loss = F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg)
        avg /= dist.get_world_size()
        if dist.get_rank() == 0 and step % 4 == 0:
            print(f"step {step:4d} | loss {avg.item():.4f}")
        step += 1
dist.destroy_process_group()
