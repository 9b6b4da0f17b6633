import torch
from torch.cuda.amp import GradScaler
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, loader, optimizer, configs):
    train_precision = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[configs.dtype]
    scaler = GradScaler(enabled=(configs.dtype == "float16"))
    for x, y in loader:
        with torch.autocast(device_type="cuda", dtype=train_precision):  # expect: fp16-no-scaler
            loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
