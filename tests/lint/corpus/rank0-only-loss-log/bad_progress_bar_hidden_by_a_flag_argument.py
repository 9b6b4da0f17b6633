# speechbrain ``Brain.fit``: ``enable = progressbar and if_main_process()`` is handed to
# ``_fit_train(..., enable=enable)``, whose tqdm bar is ``disable=not enable``: the bar's running
# loss is rank 0's. The loss is what ``fit_batch`` backprops through ``scaler.scale(loss / accum)``.
import torch.distributed as dist
from tqdm import tqdm


def if_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


class Brain:
    def fit_batch(self, batch):
        loss = self.compute_objectives(batch)
        scaled_loss = self.scaler.scale(loss / self.accum)
        scaled_loss.backward()
        self.scaler.step(self.optimizer)
        return loss.detach()

    def _fit_train(self, train_set, enable):
        avg_train_loss = 0.0
        with tqdm(train_set, disable=not enable) as t:
            for step, batch in enumerate(t, 1):
                loss = self.fit_batch(batch)
                avg_train_loss += (loss.item() - avg_train_loss) / step
                t.set_postfix(train_loss=avg_train_loss)  # expect: rank0-only-loss-log

    def fit(self, train_set, progressbar=True):
        enable = progressbar and if_main_process()
        self._fit_train(train_set, enable=enable)
