# PyTorch-Ignite: `idist.auto_model(model)` wraps the model in DDP when the run is distributed.
# The engine's process function backprops on every iteration and steps every
# `accumulation_steps`, with no `no_sync`: every micro-step all-reduces.
import ignite.distributed as idist
from ignite.engine import Engine


def run(model, optimizer, loss_fn, loader, accumulation_steps):
    model = idist.auto_model(model)
    optimizer = idist.auto_optim(optimizer)

    def train(engine, batch):
        x, y = batch
        loss = loss_fn(model(x), y) / accumulation_steps
        loss.backward()  # expect: accum-no-sync-missing
        if engine.state.iteration % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
        return loss.item()

    trainer = Engine(train)
    trainer.run(loader, max_epochs=2)
