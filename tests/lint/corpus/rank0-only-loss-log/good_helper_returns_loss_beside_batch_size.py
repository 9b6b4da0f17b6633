# open_clip: a helper returns (losses, batch size); only position 0 holds the loss, so the sample
# counter built from the batch size is not the loss, and the losses are all-reduced in place before
# rank 0 logs them. A function whose name ends in `_scaler` is a function, not a loss-scaler object.
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def backward(total_loss, scaler):
    if scaler is not None:
        scaler.scale(total_loss).backward()
    else:
        total_loss.backward()


def train_step(model, batch, optimizer, scaler):
    losses = model(batch)
    total_loss = losses["loss"]
    backward(total_loss, scaler)
    optimizer.step()
    return losses, len(batch)


def make_train_step_no_scaler(model, optimizer):
    def step(batch):
        return model(batch)

    return step


def train(model, loader, optimizer, scaler, world_size, rank):
    model = DDP(model)
    compiled = make_train_step_no_scaler(model, optimizer)
    num_samples = 0
    for batch in loader:
        losses, batch_size = train_step(model, batch, optimizer, scaler)
        num_samples += batch_size * world_size
        reduced = {k: v.detach().clone() for k, v in losses.items()}
        for v in reduced.values():
            dist.all_reduce(v)
        if rank == 0:
            print(f"samples {num_samples} loss {reduced['loss'].item() / world_size:.3f} {compiled}")
