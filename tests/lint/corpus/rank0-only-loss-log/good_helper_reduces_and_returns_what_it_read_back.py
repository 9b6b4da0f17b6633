# scBERT / course-code style: a helper reduces a tensor in place and returns a value read back out
# of it (``tensor.item() / world_size``), and the epoch function returns such a helper's result;
# what rank 0 prints is the global mean.
import torch
import torch.distributed as dist


def get_reduced(value, device, world_size):
    tensor = torch.tensor(value).to(device)
    dist.reduce(tensor, dst=0)
    tensor_mean = tensor.item() / world_size
    return tensor_mean


def sync_loss_acc(loss_sum, correct, total, device):
    metrics = torch.tensor([loss_sum, correct, total], dtype=torch.float64, device=device)
    dist.all_reduce(metrics, op=dist.ReduceOp.SUM)
    loss_avg = metrics[0].item() / metrics[2].item()
    acc_avg = metrics[1].item() / metrics[2].item()
    return loss_avg, acc_avg


def train_one_epoch(model, loader, criterion, optimizer, device):
    loss_sum, correct, total = 0.0, 0, 0
    for images, labels in loader:
        optimizer.zero_grad()
        outputs = model(images)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        loss_sum += loss.item() * labels.size(0)
        correct += outputs.argmax(1).eq(labels).sum().item()
        total += labels.size(0)
    return sync_loss_acc(loss_sum, correct, total, device)


def main(model, loader, criterion, optimizer, device, rank, world_size):
    for epoch in range(10):
        train_loss, train_acc = train_one_epoch(model, loader, criterion, optimizer, device)
        if rank == 0:
            print(f"epoch {epoch} train loss {train_loss:.4f} acc {train_acc:.3f}")
    running = 0.0
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        running += loss.item()
    epoch_loss = get_reduced(running / (step + 1), device, world_size)
    if rank == 0:
        print(f"last epoch loss {epoch_loss:.4f}")
