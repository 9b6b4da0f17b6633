# contriever style: the stats meter is read through `average_stats`, a property that averages every
# value across ranks before the main-process log.
import logging

import torch.distributed as dist

logger = logging.getLogger(__name__)


def train(model, loader, optimizer, run_stats, tb_logger):
    for step, batch in enumerate(loader):
        loss, iter_stats = model(**batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        run_stats.update(iter_stats)
        if dist.get_rank() == 0 and step % 100 == 0:
            log = f"{step}"
            for k, v in sorted(run_stats.average_stats.items()):
                log += f" | {k}: {v:.3f}"
                tb_logger.add_scalar(k, v, step)
            logger.info(log)
