# HALOs: the base trainer's loop backprops the loss that ``self.get_batch_metrics`` returns first
# and logs, on the main process, the metrics it returns second. The base declares the method; the
# subclasses override it, and every override fills the metrics with gathered values.
from collections import defaultdict

import torch
import wandb


class BasicTrainer:
    def get_batch_metrics(self, batch):
        """The loss and a dict of metrics."""
        raise NotImplementedError

    def train(self):
        batch_metrics = defaultdict(list)
        for batch in self.loader:
            loss, metrics = self.get_batch_metrics(batch)
            self.accelerator.backward(loss)
            for k, v in metrics.items():
                batch_metrics[k].extend(torch.as_tensor(v).reshape(-1).tolist())
            self.optimizer.step()
            self.optimizer.zero_grad()
            mean_train_metrics = {k: sum(v) / len(v) for k, v in batch_metrics.items()}
            if self.accelerator.is_main_process:
                wandb.log(mean_train_metrics)


class SFTTrainer(BasicTrainer):
    def get_batch_metrics(self, batch):
        metrics = {}
        loss = self.policy(batch).mean()
        metrics["loss/train"] = self.accelerator.gather(loss.detach())
        return loss, metrics


class PairedTrainer(BasicTrainer):
    def get_batch_metrics(self, batch):
        metrics = {}
        losses = self.policy(batch)
        metrics["loss/train"] = self.accelerator.gather(losses.mean().detach()).mean()
        return losses.mean(), metrics


class DPOTrainer(PairedTrainer):
    def get_batch_metrics(self, batch):
        metrics = {}
        losses = torch.nn.functional.logsigmoid(self.policy(batch))
        metrics["loss/train"] = self.accelerator.gather(losses.detach()).mean()
        return losses.mean(), metrics
