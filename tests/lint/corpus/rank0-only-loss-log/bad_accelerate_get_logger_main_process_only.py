import logging

from accelerate import Accelerator
from accelerate.logging import get_logger

accelerator = Accelerator()
# accelerate's logger records on the main process only unless a call says main_process_only=False
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
        log.info(f"Epoch {epoch}: {epoch_loss:.5f}")  # expect: rank0-only-loss-log
