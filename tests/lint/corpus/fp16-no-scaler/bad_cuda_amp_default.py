from torch.cuda.amp import autocast


class Trainer:
    def step(self, batch):
        with autocast():  # expect: fp16-no-scaler
            loss = self.model(batch).loss
        loss.backward()
        self.optimizer.step()
