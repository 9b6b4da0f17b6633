# The logger decides once which ranks log (rsl_rl's ``self.disable_logs = is_distributed and
# gpu_global_rank != 0``) and builds its writer only where logging is on: every write through
# ``self.writer`` is rank 0's, whichever method makes it.
from torch.utils.tensorboard import SummaryWriter


class Runner:
    def __init__(self, model, optimizer, log_dir, is_distributed, global_rank):
        self.model = model
        self.optimizer = optimizer
        self.log_dir = log_dir
        self.disable_logs = is_distributed and global_rank != 0
        self.writer = None

    def init_writer(self):
        if self.log_dir is not None and not self.disable_logs:
            self.writer = SummaryWriter(log_dir=self.log_dir)
        else:
            self.writer = None

    def learn(self, batches):
        self.init_writer()
        for it, batch in enumerate(batches):
            loss = self.model(batch).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if self.writer is not None:
                self.writer.add_scalar("Loss/surrogate", loss.item(), it)  # expect: rank0-only-loss-log
