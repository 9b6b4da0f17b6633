# A whole nanoGPT-style training script (written for this test): DDP via torchrun, per-rank data
# offsets instead of a DistributedSampler, the sync flag set before the forward, loss divided by
# the accumulation count, unscale_ before clipping. Its one finding is real: the printed loss is
# rank 0's own (nanoGPT says so in a comment).
import os
from contextlib import nullcontext

import numpy as np
import torch
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP

gradient_accumulation_steps = 40
batch_size, block_size = 12, 1024
learning_rate, max_iters, grad_clip = 6e-4, 600000, 1.0
log_interval = 1
dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    init_process_group(backend="nccl")
    ddp_rank = int(os.environ["RANK"])
    ddp_local_rank = int(os.environ["LOCAL_RANK"])
    ddp_world_size = int(os.environ["WORLD_SIZE"])
    device = f"cuda:{ddp_local_rank}"
    master_process = ddp_rank == 0
    seed_offset = ddp_rank
    gradient_accumulation_steps //= ddp_world_size
else:
    master_process, seed_offset, ddp_world_size, device = True, 0, 1, "cuda"
torch.manual_seed(1337 + seed_offset)
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = nullcontext() if device == "cpu" else torch.amp.autocast(device_type="cuda", dtype=ptdtype)


def get_batch(split):
    data = np.memmap(os.path.join("data", f"{split}.bin"), dtype=np.uint16, mode="r")
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i:i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block_size].astype(np.int64)) for i in ix])
    return x.to(device), y.to(device)


def main(model):
    scaler = torch.amp.GradScaler("cuda", enabled=(dtype == "float16"))
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    if ddp:
        model = DDP(model, device_ids=[ddp_local_rank])
    X, Y = get_batch("train")
    iter_num = 0
    while True:
        for micro_step in range(gradient_accumulation_steps):
            if ddp:
                model.require_backward_grad_sync = (micro_step == gradient_accumulation_steps - 1)
            with ctx:
                logits, loss = model(X, Y)
                loss = loss / gradient_accumulation_steps
            X, Y = get_batch("train")
            scaler.scale(loss).backward()
        if grad_clip != 0.0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        if iter_num % log_interval == 0 and master_process:
            lossf = loss.item() * gradient_accumulation_steps
            print(f"iter {iter_num}: loss {lossf:.4f}")  # expect: rank0-only-loss-log
        iter_num += 1
        if iter_num > max_iters:
            break
    if ddp:
        destroy_process_group()
