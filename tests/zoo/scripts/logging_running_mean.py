# zoo: expect=rank0-only-loss-log
# The classic "running loss" print: rank 0 averages its own losses over the last 5 steps and logs
# them with the logging module (rank-local running mean, never all-reduced).
import logging
import sys

import torch
import torch.distributed as dist
from torch import nn, optim
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

logger = logging.getLogger(__name__)


def setup_logging(rank):
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("[%(asctime)s][rank %(rank)s] %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if rank == 0 else logging.WARNING)
    return logging.LoggerAdapter(logger, {"rank": rank})


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    log = setup_logging(rank)
    torch.manual_seed(0)
    features = torch.randn(640, 6)
    targets = features[:, :1] * 2 - features[:, 1:2] + 0.3 * torch.randn(640, 1)
    ds = TensorDataset(features, targets)
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=sampler)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)))
    optimizer = optim.SGD(model.parameters(), lr=0.02)
    criterion = nn.MSELoss()
    running_loss = 0.0
    for epoch in range(1):
        sampler.set_epoch(epoch)
        for i, (inputs, labels) in enumerate(loader):
            optimizer.zero_grad()
            loss = criterion(model(inputs), labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            if i % 5 == 4:
                log.info("[%d, %5d] loss: %.3f", epoch + 1, i + 1, running_loss / 5)
                running_loss = 0.0
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
