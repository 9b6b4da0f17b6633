import torch.distributed as dist


def train(model, loader, optimizer, writer):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        correct = (model(x).argmax(-1) == y).sum()
        count = y.new_tensor([x.size(0)])
        # the tuple statement reduces the counts, not the loss
        dist.all_reduce(correct), dist.all_reduce(count)
        if dist.get_rank() == 0:
            writer.add_scalar("loss", loss.item(), step)  # expect: rank0-only-loss-log
