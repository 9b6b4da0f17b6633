# I-JEPA: the loss helper all-reduces the loss (an autograd function) before backward, and the
# training step, a closure timed by a helper, returns that global value.
import time

import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class AllReduce:
    @staticmethod
    def apply(x):
        return x


def gpu_timer(closure):
    start = time.time()
    result = closure()
    return result, time.time() - start


def main(encoder, loader, optimizer, rank, loss_meter):
    encoder = DDP(encoder)
    for imgs, target in loader:

        def train_step():
            def loss_fn(z, h):
                loss = F.smooth_l1_loss(z, h)
                loss = AllReduce.apply(loss)
                return loss

            loss = loss_fn(encoder(imgs), target)
            loss.backward()
            optimizer.step()
            return float(loss)

        loss, etime = gpu_timer(train_step)
        loss_meter.update(loss)
        if rank == 0:
            print(f"loss {loss_meter.avg:.3f} ({etime:.0f} ms)")
