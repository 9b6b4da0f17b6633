# The step hands the loss to a log method of its class that prints only on the main process
# (seed-vc ``self._log_training_progress(epoch, i, loss, ...)``): one logging event, reported once,
# at the print inside the method, not also at the call.
import torch


class Trainer:
    def __init__(self, accelerator, model, optimizer):
        self.accelerator = accelerator
        self.model = model
        self.optimizer = optimizer
        self.iters = 0

    def process_batch(self, epoch, i, batch):
        loss_ar, loss_cfm = self.model(*batch)
        loss = loss_ar + loss_cfm
        self.accelerator.backward(loss)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1000.0)
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.log_progress(epoch, i, loss)
        self.iters += 1

    def log_progress(self, epoch, i, loss):
        if self.iters % 10 == 0 and self.accelerator.is_main_process:
            print("epoch %d step %d loss %.4f" % (epoch, i, loss.item()))  # expect: rank0-only-loss-log
