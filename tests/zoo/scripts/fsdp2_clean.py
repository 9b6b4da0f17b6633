# zoo: expect=none
# FSDP2 (fully_shard) on a small MLP stack, plain loop, no accumulation, loss averaged for printing.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard


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
    for it in range(20):
        x = torch.randn(8, 32, generator=gen)
        loss = nn.functional.mse_loss(model(x), x @ target)
        loss.backward()
        opt.step()
        opt.zero_grad()
        report = loss.detach().clone()
        dist.all_reduce(report)
        if dist.get_rank() == 0 and it % 5 == 0:
            print(f"it {it} loss {report.item() / dist.get_world_size():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
