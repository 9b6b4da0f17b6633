import torch
import wandb


def evaluate(model, loader):
    with torch.no_grad():
        losses = [model(b).mean().item() for b in loader]
    return sum(losses), losses[-1], 0.5


def train(model, loader, dev_loader, optimizer, local_rank):
    model = torch.nn.parallel.DistributedDataParallel(model)
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        _ = loss.item()
        optimizer.step()
    if local_rank in [-1, 0]:
        # ``_`` discards what it is bound to; ``dev_*`` are the validation split's values
        _, dev_end_loss, _ = evaluate(model, dev_loader)
        wandb.log({"dev_end_loss": dev_end_loss})
