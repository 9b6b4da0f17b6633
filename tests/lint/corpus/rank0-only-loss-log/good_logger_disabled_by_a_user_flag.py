# ``logger.disabled = True`` when the user asks for quiet, on every rank alike: whichever ranks log,
# each logs its own loss; nothing is rank 0's alone.
import logging

logger = logging.getLogger(__name__)


def train(model, loader, optimizer, quiet):
    if quiet:
        logger.disabled = True
    for step, batch in enumerate(loader):
        loss = model(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            logger.info("step %d loss %.4f", step, loss.item())
