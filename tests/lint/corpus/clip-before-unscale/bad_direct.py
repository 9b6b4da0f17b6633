import torch


def train(model, loader, optimizer):
    scaler = torch.cuda.amp.GradScaler()
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: clip-before-unscale
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
