# YOLOX: the model's output dict holds the loss (`loss = outputs["total_loss"]`), the whole dict is
# fed to `self.meter` in the training method, and another method logs the meter's loss entries on
# rank 0. The learning rate read from the same meter is not the loss.
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, meter, rank, tblogger):
        self.model = DDP(model)
        self.meter = meter
        self.rank = rank
        self.tblogger = tblogger

    def train_one_iter(self, inps, targets, optimizer):
        outputs = self.model(inps, targets)
        loss = outputs["total_loss"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        self.meter.update(lr=optimizer.param_groups[0]["lr"], **outputs)

    def after_iter(self, step):
        loss_meter = self.meter.get_filtered_meter("loss")
        if self.rank == 0:
            for k, v in loss_meter.items():
                self.tblogger.add_scalar(f"train/{k}", v.latest, step)  # expect: rank0-only-loss-log
            self.tblogger.add_scalar("train/lr", self.meter["lr"].latest, step)
