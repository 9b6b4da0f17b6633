import torch.nn.functional as F


class Trainer:
    def accumulate(self, inputs, targets, accum_steps):
        for i in range(accum_steps):
            logits = self.ddp_model(inputs[i])
            loss = F.cross_entropy(logits, targets[i]) / accum_steps
            if i < accum_steps - 1:
                with self.ddp_model.no_sync():  # expect: no-sync-after-forward
                    loss.backward()
            else:
                loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
