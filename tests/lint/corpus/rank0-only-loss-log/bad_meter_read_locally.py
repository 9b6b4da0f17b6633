# The same meter read through its local `stats`: rank 0's own averages.
import logging

import torch.distributed as dist

logger = logging.getLogger(__name__)


def train(model, loader, optimizer, run_stats):
    for step, batch in enumerate(loader):
        loss, iter_stats = model(**batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        run_stats.update(iter_stats)
        if dist.get_rank() == 0 and step % 100 == 0:
            log = f"{step}"
            for k, v in sorted(run_stats.stats.items()):
                log += f" | {k}: {v:.3f}"
            logger.info(log)  # expect: rank0-only-loss-log
