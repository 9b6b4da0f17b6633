# trl PPO style: the trainer prepares its attributes, then the training method reads them into
# locals; the local `optimizer` is the prepared optimizer, which accelerate gates in `accumulate()`.
from accelerate import Accelerator


class Trainer:
    def __init__(self, model, optimizer, loader, args):
        self.accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
        self.model, self.optimizer, self.dataloader = self.accelerator.prepare(model, optimizer, loader)

    def train(self):
        accelerator = self.accelerator
        model = self.model
        optimizer = self.optimizer
        for batch in self.dataloader:
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
