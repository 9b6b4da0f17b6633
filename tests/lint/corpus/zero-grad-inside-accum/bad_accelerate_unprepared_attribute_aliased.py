# The alias names an optimizer that was never prepared (only the model and loader were):
# accelerate does not gate its zero_grad, which runs on every micro-step.
import torch
from accelerate import Accelerator


class Trainer:
    def __init__(self, model, loader, args):
        self.accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
        self.optimizer = torch.optim.AdamW(model.parameters())
        self.model, self.dataloader = self.accelerator.prepare(model, loader)

    def train(self):
        accelerator = self.accelerator
        model = self.model
        optimizer = self.optimizer
        for batch in self.dataloader:
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()  # expect: zero-grad-inside-accum
