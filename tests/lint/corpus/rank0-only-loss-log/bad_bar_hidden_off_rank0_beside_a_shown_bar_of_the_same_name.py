# Two trainers in one file name their bar ``pbar``: only the accelerate one hides it off the main
# process; the single-process trainer's bar shows every process's (its only process's) loss.
from accelerate import Accelerator
from tqdm import tqdm


class Trainer:
    def __init__(self, model, opt, dl, steps):
        self.model, self.opt, self.dl, self.steps = model, opt, dl, steps

    def train(self):
        with tqdm(total=self.steps) as pbar:
            for x, y in self.dl:
                loss = (self.model(x) - y).pow(2).mean()
                loss.backward()
                self.opt.step()
                self.opt.zero_grad()
                pbar.set_description(f"loss: {loss.item():.4f}")


class AccelerateTrainer(Trainer):
    def __init__(self, accelerator: Accelerator, model, opt, dl, steps):
        super().__init__(*accelerator.prepare(model, opt, dl), steps)
        self.accelerator = accelerator

    def train(self):
        with tqdm(total=self.steps, disable=not self.accelerator.is_main_process) as pbar:
            for x, y in self.dl:
                loss = (self.model(x) - y).pow(2).mean()
                self.accelerator.backward(loss)
                self.opt.step()
                self.opt.zero_grad()
                pbar.set_description(f"loss: {loss.item():.4f}")  # expect: rank0-only-loss-log
