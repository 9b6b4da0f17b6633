# PyTorch-Ignite: a handler filtered to every `accumulation_steps` iterations, an epoch handler,
# and an engine whose process function steps on every call: no micro-step scheduling.
import torch
from ignite.engine import Engine, Events


def run(model, optimizer, loss_fn, loader, accumulation_steps):
    def train(engine, batch):
        x, y = batch
        loss = loss_fn(model(x), y) / accumulation_steps
        loss.backward()
        if engine.state.iteration % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()

    def plain(engine, batch):
        x, y = batch
        loss_fn(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()

    trainer = Engine(train)
    other = Engine(plain)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10)

    @trainer.on(Events.ITERATION_COMPLETED(every=accumulation_steps))
    def step_filtered(engine):
        scheduler.step()

    @trainer.on(Events.EPOCH_COMPLETED)
    def step_epoch(engine):
        scheduler.step()

    @other.on(Events.ITERATION_COMPLETED)
    def step_plain(engine):
        scheduler.step()

    trainer.run(loader, max_epochs=2)
    other.run(loader, max_epochs=2)
