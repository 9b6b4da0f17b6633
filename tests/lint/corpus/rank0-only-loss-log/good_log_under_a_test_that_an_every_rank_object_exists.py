# The run object exists on every rank (each rank starts its own, grouped): ``if self.wandb_run is
# not None:`` holds everywhere, each rank logs its own loss, nothing is rank 0's alone.
import wandb


class Trainer:
    def __init__(self, model, opt, wandb_run):
        self.model = model
        self.opt = opt
        self.wandb_run = wandb_run

    def train(self, loader):
        for step, batch in enumerate(loader):
            loss = self.model(batch)
            loss.backward()
            self.opt.step()
            self.opt.zero_grad()
            if self.wandb_run is not None:
                wandb.log({"noise_loss": loss}, step=step)


def main(rank, model, opt, loader, use_wandb):
    wandb_run = None
    if use_wandb:
        wandb_run = wandb.init(project="ldm", group="ddp", name=f"rank{rank}")
    Trainer(model, opt, wandb_run).train(loader)
