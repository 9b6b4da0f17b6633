# A log helper handed the loss averaged over the ranks, or values that are not the loss (the
# learning rate, the batch's accuracy), logs no rank-local loss.
import torch.distributed as dist


def report(step, value, lr):
    if dist.get_rank() == 0:
        print(f"step {step}: loss {value:.4f} lr {lr}")


def report_accuracy(step, acc):
    if dist.get_rank() == 0:
        print(f"step {step}: accuracy {acc:.3f}")


def train(model, loader, optimizer):
    for step, (x, y) in enumerate(loader):
        out = model(x)
        loss = out.loss
        loss.backward()
        optimizer.step()
        dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        report(step, loss.item(), optimizer.param_groups[0]["lr"])
        acc = (out.logits.argmax(-1) == y).float().mean()
        report_accuracy(step, acc)
