import torch.distributed as dist


def train(model, loader, loss_fn, optimizer, accumulate):
    for step, (images, texts) in enumerate(loader):
        output = model(images, texts)
        loss = loss_fn(**output) * dist.get_world_size() / accumulate
        loss.backward()
        if (step + 1) % accumulate == 0:
            optimizer.step()
            optimizer.zero_grad()
