import torch.distributed as dist


def train(model, loader, optimizer):
    for step, batch in enumerate(loader):
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if dist.get_rank() == 0:
            print(f"step {step} loss {loss.item():.4f}")  # expect: rank0-only-loss-log
