# As good_metrics_of_subclass_overrides_gathered, but one override puts its own rank's loss in the
# metrics: what the base's loop logs is rank 0's local value when that trainer runs.
from collections import defaultdict

import torch
import wandb


class BasicTrainer:
    def get_batch_metrics(self, batch):
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
                wandb.log(mean_train_metrics)  # expect: rank0-only-loss-log


class SFTTrainer(BasicTrainer):
    def get_batch_metrics(self, batch):
        metrics = {}
        loss = self.policy(batch).mean()
        metrics["loss/train"] = self.accelerator.gather(loss.detach())
        return loss, metrics


class KTOTrainer(BasicTrainer):
    def get_batch_metrics(self, batch):
        metrics = {}
        losses = self.policy(batch)
        metrics["loss/train"] = losses.mean().detach()
        return losses.mean(), metrics
