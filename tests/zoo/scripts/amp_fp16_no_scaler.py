# zoo: expect=fp16-no-scaler
# Mixed precision with float16 autocast but no GradScaler (small gradients underflow in fp16).
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

device_type = "cuda" if torch.cuda.is_available() else "cpu"


def main():
    dist.init_process_group("nccl" if device_type == "cuda" else "gloo")
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{local_rank}" if device_type == "cuda" else "cpu")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64)).to(device)
    model = DDP(model, device_ids=[local_rank] if device_type == "cuda" else None)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(dist.get_rank())
    for step in range(24):
        x = torch.randn(16, 64, generator=g).to(device)
        with torch.autocast(device_type=device_type, dtype=torch.float16):
            y = model(x)
            loss = ((y.float() - x) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    if dist.get_rank() == 0:
        print("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
