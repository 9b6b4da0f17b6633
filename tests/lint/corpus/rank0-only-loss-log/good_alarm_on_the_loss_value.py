# jukebox / MSN style: a message printed only when the loss takes some value (too large,
# overflow, NaN) is an alarm about that value, not the training curve; a meter's count is a count.
import torch.distributed as dist


def backward(loss, params, rank):
    loss.backward()
    overflow = not bool(loss.isfinite())
    if rank == 0:
        if loss > 12.0:
            print(f"Warning. Loss is {loss}")
        if overflow:
            print(f"Overflow in forward. Loss {loss}")
    return loss


def train(model, loader, optimizer, meter):
    for batch in loader:
        loss = model(batch).mean()
        backward(loss, model.parameters(), dist.get_rank())
        optimizer.step()
        meter.update(loss.item())
        if dist.get_rank() == 0 and meter.count > 0 and loss.item() > 100:
            print("loss spike", loss.item())
