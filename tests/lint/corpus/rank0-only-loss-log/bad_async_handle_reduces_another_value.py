import torch.distributed as dist


def train(model, loader, optimizer, logger):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        count = y.new_tensor([x.size(0)])
        # the asynchronous collective combines the count, not the loss
        handle = dist.all_reduce(count, async_op=True)
        handle.wait()
        if dist.get_rank() == 0:
            logger.info(f"step {step} loss {loss.item():.4f}")  # expect: rank0-only-loss-log
