class Runner:
    def __init__(self, model, optimizer, accum):
        self.model, self.optimizer, self.accum = model, optimizer, accum

    def compute_loss(self, batch):
        outputs = self.model(**batch)
        return outputs.loss

    def step(self, micro_batches):
        for batch in micro_batches:
            loss = self.compute_loss(batch)
            loss.backward()  # expect: accum-loss-unscaled
        self.optimizer.step()
        self.optimizer.zero_grad()
