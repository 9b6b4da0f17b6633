import lightning.pytorch as pl
import torch.nn.functional as F


class VQModel(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        x, y = batch
        aeloss, log_dict = self.loss_fn(self(x), y)
        self.log("train/aeloss", aeloss, prog_bar=True, on_step=True, on_epoch=True)  # expect: rank0-only-loss-log
        self.log_dict(log_dict, on_step=True)  # expect: rank0-only-loss-log
        return aeloss

    def loss_fn(self, out, y):
        loss = F.mse_loss(out, y)
        return loss, {"train/rec": loss.detach()}
