# ``torch.gather(images, 1, index)`` picks one modality per sample: a tensor op, not a collective.
# The loss computed from the picked images is still this rank's own, printed on local rank 0.
import torch


def train(args, model, diffusion, loader, optimizer):
    for step, batch in enumerate(loader):
        images, labels = batch
        index = labels[:, None, None, None].repeat(1, 1, 8, 8)
        images = torch.gather(images, 1, index)
        loss = diffusion.train_losses(model, images)
        if args.local_rank == 0 and step % 10 == 0:
            print("step {} loss {:.4f}".format(step, loss.item()))  # expect: rank0-only-loss-log
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
