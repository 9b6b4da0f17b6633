# The writer is built behind the user's ``quiet`` flag, the same on every rank: each rank that logs
# writes its own loss, nothing is rank 0's alone.
from torch.utils.tensorboard import SummaryWriter


class Runner:
    def __init__(self, model, optimizer, log_dir, quiet):
        self.model = model
        self.optimizer = optimizer
        self.log_dir = log_dir
        self.disable_logs = quiet
        self.writer = None

    def init_writer(self):
        if not self.disable_logs:
            self.writer = SummaryWriter(log_dir=self.log_dir)

    def learn(self, batches):
        self.init_writer()
        for it, batch in enumerate(batches):
            loss = self.model(batch).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if self.writer is not None:
                self.writer.add_scalar("Loss/surrogate", loss.item(), it)
