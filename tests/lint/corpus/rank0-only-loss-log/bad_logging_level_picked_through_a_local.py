# CBIM style ``configure_logger``: the level is picked by the rank into a local, then handed to
# ``basicConfig``; the other ranks drop ``info`` records.
import logging


def configure_logger(rank):
    level = logging.INFO if rank in {-1, 0} else logging.WARNING
    logging.basicConfig(level=level, handlers=[logging.StreamHandler()])


def train(model, loader, optimizer, rank):
    configure_logger(rank)
    for it, batch in enumerate(loader):
        loss = model(batch).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        logging.info(f"iter {it} loss {loss.item():.4f}")  # expect: rank0-only-loss-log
