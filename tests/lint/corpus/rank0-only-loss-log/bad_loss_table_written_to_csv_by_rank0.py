# The epoch table (a pandas DataFrame) gets this rank's average training loss and is written to
# CSV by local rank 0 only.
import pandas as pd
from torch.nn.parallel import DistributedDataParallel as DDP


class AverageMeter:
    def __init__(self):
        self.sum, self.count, self.avg = 0.0, 0, 0.0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def train(args, model, loader, optimizer):
    model = DDP(model, device_ids=[args.local_rank])
    log = pd.DataFrame(columns=["epoch", "loss"])
    for epoch in range(args.epochs):
        losses = AverageMeter()
        for x, y in loader:
            loss = (model(x) - y).pow(2).mean()
            losses.update(loss.item(), x.shape[0])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if args.local_rank == 0:
            row = pd.Series([epoch, losses.avg], index=["epoch", "loss"])
            log = pd.concat([log, row.to_frame().T], ignore_index=True)
            log.to_csv("log.csv", index=False)  # expect: rank0-only-loss-log
