import torch.distributed as dist

WORLD_SIZE = dist.get_world_size()


def train(model, loader, loss_fn, optimizer, accumulate):
    for step, (images, texts) in enumerate(loader):
        output = model(images, texts)
        loss = loss_fn(**output)
        loss = loss * WORLD_SIZE  # undoes DDP's mean over ranks, not the accumulation
        loss.backward()  # expect: accum-loss-unscaled
        if (step + 1) % accumulate == 0:
            optimizer.step()
            optimizer.zero_grad()
