# ``self.verbose = True`` then, in a distributed run, ``self.verbose = False`` on every rank but 0:
# ``if self.verbose:`` is a rank-0 test, and the bar shows rank 0's own loss.
import torch.distributed as dist
from tqdm import tqdm


class Trainer:
    def __init__(self, args, model, optim, loader):
        self.args = args
        self.model = model
        self.optim = optim
        self.loader = loader
        self.verbose = True
        if self.args.distributed:
            if dist.get_rank() != 0:
                self.verbose = False

    def train(self):
        pbar = tqdm(total=len(self.loader)) if self.verbose else None
        for batch in self.loader:
            loss = self.model(**batch).loss
            loss.backward()
            self.optim.step()
            self.optim.zero_grad()
            if self.verbose:
                pbar.set_description(f"Loss {loss.item():6f}")  # expect: rank0-only-loss-log
