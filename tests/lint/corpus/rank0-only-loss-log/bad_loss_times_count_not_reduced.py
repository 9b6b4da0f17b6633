# The loss is weighted by the batch size into a running sum that is never all-reduced: the rank-0
# epoch loss is rank 0's own.
def train_epoch(model, loader, optimizer, criterion, logger, is_main):
    train_loss, count = 0.0, 0
    for data, label in loader:
        batch_size = data.size(0)
        loss = criterion(model(data), label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        count += batch_size
        train_loss += loss.item() * batch_size
    if is_main:
        logger.info(f"train loss {train_loss / count:.4f}")  # expect: rank0-only-loss-log
