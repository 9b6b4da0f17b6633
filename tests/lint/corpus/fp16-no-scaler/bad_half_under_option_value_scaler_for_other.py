import torch
from torch.cuda.amp import GradScaler
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args, model, loader):
    if args.precision == "fp16":
        model.half()  # expect: fp16-no-scaler
    model = DDP(model)
    optimizer = torch.optim.AdamW(model.parameters())
    scaler = GradScaler() if args.precision == "amp" else None
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad()
