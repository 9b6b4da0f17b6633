import lightning.pytorch as pl
import torch.nn.functional as F


class Classifier(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(-1) == y).float().mean()
        self.log("train_loss", loss, sync_dist=True)
        self.log("train_acc", acc)  # an accuracy, not the loss
        return {"loss": loss}

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y))
