# LightningLite/Fabric subclass (CoTracker style): ``self.backward(scaler.scale(loss))`` backprops
# the loss it is handed; rank 0 alone writes that loss to TensorBoard.
import torch
from pytorch_lightning.lite import LightningLite
from torch.utils.tensorboard import SummaryWriter


class Lite(LightningLite):
    def run(self, model, loader, optimizer):
        model, optimizer = self.setup(model, optimizer)
        scaler = torch.cuda.amp.GradScaler()
        writer = SummaryWriter()
        for step, batch in enumerate(loader):
            optimizer.zero_grad()
            loss = model(batch).mean()
            if self.global_rank == 0:
                writer.add_scalar("train/loss", loss.item(), step)  # expect: rank0-only-loss-log
            self.backward(scaler.scale(loss))
            scaler.step(optimizer)
            scaler.update()
