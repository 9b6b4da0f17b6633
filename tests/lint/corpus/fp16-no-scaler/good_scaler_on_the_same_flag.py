# The autocast and the GradScaler share one switch (or the scaler is always on): scaled whenever
# float16 runs.
import torch


def train_epoch(model, loader, optimizer, use_amp):
    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    for batch in loader:
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
            loss = model(batch)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


def train_epoch_bf16(model, loader, optimizer, use_amp, use_scaler):
    scaler = torch.cuda.amp.GradScaler(enabled=use_scaler)
    for batch in loader:
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=use_amp):
            loss = model(batch)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
