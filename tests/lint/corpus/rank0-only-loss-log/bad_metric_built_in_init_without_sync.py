import lightning as L
from torchmetrics import MeanMetric


class Model(L.LightningModule):
    def __init__(self, net):
        super().__init__()
        self.net = net
        self.train_loss_logger = MeanMetric(sync_on_compute=False)  # this rank's mean only

    def training_step(self, batch, batch_idx):
        loss = self.net(batch).mean()
        self.train_loss_logger.update(loss)
        return loss

    def on_train_epoch_end(self):
        self.log("train/epoch_loss", self.train_loss_logger.compute(), on_epoch=True)  # expect: rank0-only-loss-log
