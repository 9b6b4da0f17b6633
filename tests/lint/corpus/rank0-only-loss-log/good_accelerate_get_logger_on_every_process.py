import logging

from accelerate import Accelerator
from accelerate.logging import get_logger

accelerator = Accelerator()
log = get_logger(__name__)
log.setLevel(logging.INFO)


def train(model, loader, optimizer, epochs):
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(epochs):
        epoch_loss = 0.0
        for batch in loader:
            loss = model(**batch).sum()
            epoch_loss += loss.item()
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        # every rank writes its own line
        log.info(f"Epoch {epoch}: {epoch_loss:.5f}", main_process_only=False)
