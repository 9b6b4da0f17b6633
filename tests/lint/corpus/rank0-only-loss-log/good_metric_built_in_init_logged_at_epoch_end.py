import lightning as L
from torch import nn
from torchmetrics import MeanMetric


class Model(L.LightningModule):
    def __init__(self, net):
        super().__init__()
        self.net = net
        # torchmetrics all-reduce when they compute (sync_on_compute defaults to True)
        self.train_loss_logger = MeanMetric()
        self.train_term_loggers = nn.ModuleDict()
        for name in ("distogram", "diffusion"):
            self.train_term_loggers[name] = MeanMetric()

    def training_step(self, batch, batch_idx):
        terms = self.net(batch)
        loss = terms["distogram"] + terms["diffusion"]
        self.train_loss_logger.update(loss)
        for name in self.train_term_loggers.keys():
            self.train_term_loggers[name].update(terms[name])
        self.log("train/loss", loss, sync_dist=True)
        return loss

    def on_train_epoch_end(self):
        self.log("train/epoch_loss", self.train_loss_logger, on_step=False, on_epoch=True)
        for name, metric in self.train_term_loggers.items():
            self.log(f"train/{name}", metric, on_step=False, on_epoch=True)
