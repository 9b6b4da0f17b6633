# PyTorch-Ignite with the sync skipped on accumulating iterations: nothing to report.
import contextlib

import ignite.distributed as idist
from ignite.engine import Engine


def run(model, optimizer, loss_fn, loader, accumulation_steps):
    model = idist.auto_model(model)

    def train(engine, batch):
        x, y = batch
        last = engine.state.iteration % accumulation_steps == 0
        with contextlib.nullcontext() if last else model.no_sync():
            loss = loss_fn(model(x), y) / accumulation_steps
            loss.backward()
        if last:
            optimizer.step()
            optimizer.zero_grad()

    Engine(train).run(loader, max_epochs=2)
