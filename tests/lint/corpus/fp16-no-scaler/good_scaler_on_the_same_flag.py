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


class Trainer:
    # YOLOX: the autocast's switch is the scaler's, through an attribute set from it
    def __init__(self, model, optimizer, args):
        self.model, self.optimizer = model, optimizer
        self.amp_training = args.fp16
        self.scaler = torch.cuda.amp.GradScaler(enabled=args.fp16)

    def train_one_iter(self, inps, targets):
        with torch.cuda.amp.autocast(enabled=self.amp_training):
            loss = self.model(inps, targets)
        self.optimizer.zero_grad()
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
