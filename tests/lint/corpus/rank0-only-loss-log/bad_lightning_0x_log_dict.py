# PyTorch Lightning 0.x: ``training_step`` returns ``{"loss": loss, "log": {...}}`` and the
# framework hands the ``"log"`` dict to the loggers, which write on rank 0 only: its train_loss is
# rank 0's own batch loss (landmark-recognition-2020).
from collections import OrderedDict

import pytorch_lightning as pl


class Model(pl.LightningModule):
    def __init__(self, net, crit):
        super().__init__()
        self.net = net
        self.crit = crit

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = self.crit(self.net(x), y)
        tb_dict = {"train_loss": loss, "step": self.global_step}
        output = OrderedDict(
            {  # expect: rank0-only-loss-log
                "loss": loss,
                "log": tb_dict,
            }
        )
        return output
