# De-limiter style: the per-loss values are all-gathered, and rank 0 prints each loss's *name*
# (the dict's key) beside the gathered mean; the key is no loss value.
import torch
import torch.distributed as dist


def train(model, loader, optimizer, criterion, rank):
    for i, batch in enumerate(loader):
        out = model(batch)
        loss = criterion(out, batch)
        loss.backward()
        optimizer.step()
        loss_logger = {"train/loss": loss.item()}
        score = torch.tensor([value for key, value in loss_logger.items()])
        gathered = [torch.ones_like(score) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, score)
        mean = torch.mean(torch.stack(gathered), dim=0)
        if rank == 0:
            for index, (key, value) in enumerate(loss_logger.items()):
                print(f"{key} : {round(mean[index].item(), 6)}")
            for key in loss_logger.keys():
                print(key)
