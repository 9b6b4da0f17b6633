class Loop:
    def __init__(self, model, optimizer, scheduler, accum):
        self.model, self.optimizer, self.scheduler, self.accum = model, optimizer, scheduler, accum

    def forward_backward(self, batch):
        loss = self.model(batch).loss / self.accum
        loss.backward()
        self.scheduler.step()  # expect: scheduler-per-microstep

    def train_step(self, micro_batches):
        for mb in micro_batches:
            self.forward_backward(mb)
        self.optimizer.step()
        self.optimizer.zero_grad()
