# MSN: the training step is a closure timed by a helper that returns (its result, elapsed time);
# position 0 of the closure's result is the loss. The elapsed time alone is not the loss.
import time

from torch.nn.parallel import DistributedDataParallel as DDP


def gpu_timer(closure):
    start = time.time()
    result = closure()
    return result, time.time() - start


def main(encoder, loader, optimizer, rank, loss_meter):
    encoder = DDP(encoder)
    for x in loader:

        def train_step():
            optimizer.zero_grad()
            loss = encoder(x).mean()
            loss.backward()
            optimizer.step()
            return float(loss), optimizer.param_groups[0]["lr"]

        (loss, lr), etime = gpu_timer(train_step)
        loss_meter.update(loss)
        if rank == 0:
            print(f"loss {loss_meter.avg:.3f} lr {lr:.2e}")  # expect: rank0-only-loss-log
            print(f"step took {etime:.0f} ms")
