# PyTorch-Ignite: the engine calls `train` once per micro-batch (it steps the optimizer only every
# `accumulation_steps` iterations), and a handler on every ITERATION_COMPLETED steps the torch
# scheduler: the schedule advances once per micro-step.
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

    trainer = Engine(train)
    scheduler = torch.optim.lr_scheduler.CyclicLR(optimizer, base_lr=1e-5, max_lr=1e-3)
    warmup = torch.optim.lr_scheduler.LinearLR(optimizer)

    @trainer.on(Events.ITERATION_COMPLETED)
    def step_scheduler(engine):
        try:
            scheduler.step()  # expect: scheduler-per-microstep
        except ValueError:
            pass

    def step_warmup(engine):
        warmup.step()  # expect: scheduler-per-microstep

    trainer.add_event_handler(Events.ITERATION_COMPLETED, step_warmup)
    trainer.run(loader, max_epochs=2)
