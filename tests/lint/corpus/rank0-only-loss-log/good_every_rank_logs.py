import logging

log = logging.getLogger(__name__)


def train(model, loader, optimizer, rank):
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        log.info("rank %d local loss %.4f", rank, loss.item())
        if rank == 0:
            log.info("finished a step")
