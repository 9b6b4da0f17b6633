# The wandb run is started on rank 0 only (None elsewhere): ``if self.wandb_run is not None:``
# is a rank-0 test, and the loss logged under it is rank 0's own.
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
                wandb.log({"noise_loss": loss}, step=step)  # expect: rank0-only-loss-log


def main(rank, model, opt, loader):
    wandb_run = None
    if rank == 0:
        wandb_run = wandb.init(project="ldm")
    Trainer(model, opt, wandb_run).train(loader)
