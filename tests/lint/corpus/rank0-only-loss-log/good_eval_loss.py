import torch


def train(model, loader, val_batch, optimizer, is_main_process):
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    with torch.no_grad():
        val_loss = model(val_batch).mean()
    if is_main_process:
        print("val", val_loss.item())
