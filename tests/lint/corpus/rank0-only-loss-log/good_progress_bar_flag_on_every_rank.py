# The bar's flag is the user's ``progressbar`` on every rank: each rank shows its own bar, nothing
# is rank 0's alone.
from tqdm import tqdm


class Brain:
    def fit_batch(self, batch):
        loss = self.compute_objectives(batch)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        return loss.detach()

    def _fit_train(self, train_set, enable):
        avg_train_loss = 0.0
        with tqdm(train_set, disable=not enable) as t:
            for step, batch in enumerate(t, 1):
                loss = self.fit_batch(batch)
                avg_train_loss += (loss.item() - avg_train_loss) / step
                t.set_postfix(train_loss=avg_train_loss)

    def fit(self, train_set, progressbar=True):
        enable = progressbar
        self._fit_train(train_set, enable=enable)
