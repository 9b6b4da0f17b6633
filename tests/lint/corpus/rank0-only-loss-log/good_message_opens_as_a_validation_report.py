# The message opens by saying what it reports ("valid -- ..."): the loss it carries is the
# validation meter's, whatever label stands just before the placeholder (soft-HuBERT).
import logging

import torch

logger = logging.getLogger(__name__)


class Metric:
    def __init__(self):
        self.steps, self.value = 0, 0.0

    def update(self, value):
        self.steps += 1
        self.value += (value - self.value) / self.steps


def train(model, train_loader, valid_loader, optimizer, rank, epochs):
    for epoch in range(epochs):
        for batch in train_loader:
            loss = model(batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        validation_loss = Metric()
        model.eval()
        for batch in valid_loader:
            with torch.no_grad():
                loss = model(batch)
            validation_loss.update(loss.item())
        model.train()
        if rank == 0:
            logger.info(f"valid -- epoch: {epoch}, loss: {validation_loss.value:.4f}")
            logger.info("Eval %d: loss %.4f" % (epoch, validation_loss.value))
