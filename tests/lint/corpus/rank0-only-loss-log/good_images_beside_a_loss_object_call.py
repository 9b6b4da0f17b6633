# The loss comes out of a loss *object's* method (``self.loss_computer.compute(...)``, XMem): that
# call reads no loss out of ``self``, so the images and learning rate rank 0's logger writes are not
# "values carrying the loss" (the loss terms go to a synchronised integrator elsewhere).
from torch.utils.tensorboard import SummaryWriter


class Trainer:
    def __init__(self, model, loss_computer, optimizer, scheduler, rank):
        self.model = model
        self.loss_computer = loss_computer
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.logger = SummaryWriter() if rank == 0 else None

    def do_pass(self, data, it):
        out = {}
        masks, logits = self.model(data["rgb"])
        out["masks"] = masks
        out["logits"] = logits
        losses = self.loss_computer.compute({**data, **out}, it)
        if self.logger is not None:
            images = {**data, **out}
            self.logger.add_images("train/pairs", images["masks"], it)
            self.logger.add_scalar("train/lr", self.scheduler.get_last_lr()[0], it)
        self.optimizer.zero_grad(set_to_none=True)
        losses["total_loss"].backward()
        self.optimizer.step()
        self.scheduler.step()
