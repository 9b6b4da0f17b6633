# The helper feeds the caller's meters with the loss averaged over the ranks; every rank logs.
import logging

import torch.distributed as dist


class Trainer:
    def _run_step(self, batch, loss_mts):
        loss = self.model(batch).mean()
        loss.backward()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced, op=dist.ReduceOp.AVG)
        loss_mts["loss"].update(reduced.item())

    def train_epoch(self, loader, loss_mts):
        for batch in loader:
            self._run_step(batch, loss_mts)
            self.optimizer.step()
        if dist.get_rank() == 0:
            logging.info(f"loss {loss_mts['loss'].avg:.4f}")
