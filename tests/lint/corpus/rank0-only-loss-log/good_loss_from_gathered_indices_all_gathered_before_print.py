# The same selection by ``torch.gather``, and the loss all-gathered across ranks before rank 0
# prints it: the printed value is the global mean.
import torch
import torch.distributed as dist


def train(args, model, diffusion, loader, optimizer, world_size):
    for step, batch in enumerate(loader):
        images, labels = batch
        index = labels[:, None, None, None].repeat(1, 1, 8, 8)
        images = images.gather(1, index)
        loss = diffusion.train_losses(model, images)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        parts = [torch.zeros_like(loss) for _ in range(world_size)]
        dist.all_gather(parts, loss.detach())
        mean = torch.stack(parts).mean()
        if args.local_rank == 0 and step % 10 == 0:
            print("step {} loss {:.4f}".format(step, mean.item()))
