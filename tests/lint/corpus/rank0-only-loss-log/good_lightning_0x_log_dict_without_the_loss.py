# Lightning 0.x ``training_step`` whose ``"log"`` dict holds the learning rate only: the loss goes
# to the framework for backward, nothing rank-local is logged.
import pytorch_lightning as pl


class Model(pl.LightningModule):
    def __init__(self, net, crit, optimizer):
        super().__init__()
        self.net = net
        self.crit = crit
        self.opt = optimizer

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = self.crit(self.net(x), y)
        return {"loss": loss, "log": {"lr": self.opt.param_groups[0]["lr"]}}
