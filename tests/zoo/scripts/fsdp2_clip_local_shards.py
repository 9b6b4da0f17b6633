# zoo: expect=fsdp-clip-wrong
# FSDP2 (fully_shard) with a hand-written gradient clip over the local shards (`grad.to_local()`):
# each rank computes the norm of its own shard only and clips by it.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

MAX_NORM = 0.1


def clip_gradients(model, max_norm):
    grads = [p.grad.to_local() for p in model.parameters() if p.grad is not None]
    total = torch.sqrt(sum((g.float() ** 2).sum() for g in grads))
    coef = max_norm / (total + 1e-6)
    if coef < 1:
        for g in grads:
            g.mul_(coef)
    return total


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        return x + self.ff(self.norm(x))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = nn.Sequential(*[Block(32) for _ in range(3)], nn.Linear(32, 1))
    for block in model[:3]:
        fully_shard(block)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(dist.get_rank())
    target = torch.randn(32, 1, generator=torch.Generator().manual_seed(9))
    for it in range(12):
        x = torch.randn(8, 32, generator=gen)
        loss = nn.functional.mse_loss(model(x), x @ target)
        loss.backward()
        norm = clip_gradients(model, MAX_NORM)
        opt.step()
        opt.zero_grad()
        if dist.get_rank() == 0 and it % 4 == 0:
            print(f"it {it} loss {loss.item():.4f} grad norm {norm.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
