# The loss is handed to a helper of the file that logs it: in a Lightning module (OpenFold's
# ``self._log(loss_breakdown, ...)`` from ``training_step``, ``sync_dist=False``) and in a plain
# script whose helper logs under a rank-0 test.
import lightning as L
import torch.distributed as dist


class Module(L.LightningModule):
    def _log(self, loss_breakdown, train=True):
        phase = "train" if train else "val"
        for name, value in loss_breakdown.items():
            self.log(f"{phase}/{name}", value, sync_dist=False)  # expect: rank0-only-loss-log

    def training_step(self, batch, batch_idx):
        loss, loss_breakdown = self.loss(self(batch), batch, _return_breakdown=True)
        self._log(loss_breakdown)
        return loss


def report(step, value):
    if dist.get_rank() == 0:
        print(f"step {step}: loss {value:.4f}")  # expect: rank0-only-loss-log


def train(model, loader, optimizer):
    for step, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        optimizer.step()
        report(step, loss.item())
