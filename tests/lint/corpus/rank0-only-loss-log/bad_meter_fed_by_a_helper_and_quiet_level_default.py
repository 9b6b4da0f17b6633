# SAM 2: ``_run_step(batch, loss_mts)`` feeds the caller's loss meters
# (``loss_mts[key].update(loss.item())``), the epoch summary reads them, and ``setup_logging`` sets
# the console handler of the other ranks to its ``log_level_secondary="ERROR"`` default.
import logging
import sys


def setup_logging(rank=0, log_level_primary="INFO", log_level_secondary="ERROR"):
    handler = logging.StreamHandler(sys.stdout)
    logging.getLogger().addHandler(handler)
    if rank == 0:
        handler.setLevel(log_level_primary)
    else:
        handler.setLevel(log_level_secondary)


class Trainer:
    def _run_step(self, batch, loss_mts):
        loss_key, loss = self._step(batch)
        self.scaler.scale(loss).backward()
        loss_mts[loss_key].update(loss.item(), len(batch))

    def train_epoch(self, loader, loss_mts):
        for batch in loader:
            self._run_step(batch, loss_mts)
            self.scaler.step(self.optimizer)
        out_dict = {}
        for k, v in loss_mts.items():
            out_dict[k] = v.avg
        logging.info(f"Losses and meters: {out_dict}")  # expect: rank0-only-loss-log
        return out_dict
