# PAConv style: the loss is multiplied by the batch size and all-reduced together with the count;
# the batch size is a count, not a term of the loss, so the running sums logged on rank 0 are global.
import torch.distributed as dist


def train_epoch(model, loader, optimizer, criterion, meter, logger, is_main):
    train_loss, count = 0.0, 0
    for data, label in loader:
        batch_size = data.size(0)
        loss = criterion(model(data), label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss = loss * batch_size
        n_seen = label.new_tensor([batch_size])
        dist.all_reduce(loss), dist.all_reduce(n_seen)
        loss = loss / n_seen.item()
        count += batch_size
        train_loss += loss.item() * batch_size
        meter.update(loss.item(), batch_size)
    if is_main:
        logger.info(f"train loss {train_loss / count:.4f} ({meter.avg:.4f}), {count} samples")
