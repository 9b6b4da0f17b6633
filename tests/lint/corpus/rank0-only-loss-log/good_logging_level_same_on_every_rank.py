# CodeExecutor style: the level is chosen by a rank-0 test but is INFO on both branches, so every
# rank logs its own line; nothing is rank 0's alone.
import logging

logger = logging.getLogger(__name__)


def main(args, model, loader, optimizer):
    logging.basicConfig(level=logging.INFO if args.local_rank in [-1, 0] else logging.INFO)
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        logger.info("step %s loss %s", step, loss.item())
