import torch.distributed as dist


def train(model, loader, optimizer):
    for step, batch in enumerate(loader):
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        global_loss = loss.detach().clone()
        dist.all_reduce(global_loss, op=dist.ReduceOp.AVG)
        if dist.get_rank() == 0:
            print(f"step {step} loss {global_loss.item():.4f}")
