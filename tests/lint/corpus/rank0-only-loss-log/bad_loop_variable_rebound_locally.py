from collections import defaultdict

import torch
import wandb


class PPOTrainer:
    def loss(self, batch):
        loss = self.policy(batch).mean()
        return loss, {"loss/total": loss.detach()}

    def train(self):
        for batch in self.loader:
            loss, metrics = self.loss(batch)
            batch_metrics = defaultdict(list)
            for k, v in metrics.items():
                v = v.float().flatten()
                batch_metrics[k].extend(torch.as_tensor(v).reshape(-1).tolist())
            self.accelerator.backward(loss)
            self.optimizer.step()
            self.optimizer.zero_grad()
            if self.accelerator.is_main_process:
                wandb.log(batch_metrics)  # expect: rank0-only-loss-log
