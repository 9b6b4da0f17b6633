import torch.distributed as dist


def train(model, loader, optimizer, logger):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss = loss.detach()
        # asynchronous: the result is a work handle, the loss is combined in place
        handle = dist.all_reduce(loss, op=dist.ReduceOp.SUM, async_op=True)
        handle.wait()
        loss.div_(dist.get_world_size())
        value = loss.item()
        if dist.get_rank() == 0:
            logger.info(f"step {step} loss {value:.4f}")
