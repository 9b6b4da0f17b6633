# ``self.verbose`` lowered by a quiet option, not by the rank: every rank shows its own loss.
from tqdm import tqdm


class Trainer:
    def __init__(self, args, model, optim, loader):
        self.args = args
        self.model = model
        self.optim = optim
        self.loader = loader
        self.verbose = True
        if self.args.quiet:
            self.verbose = False

    def train(self):
        pbar = tqdm(total=len(self.loader))
        for batch in self.loader:
            loss = self.model(**batch).loss
            loss.backward()
            self.optim.step()
            self.optim.zero_grad()
            if self.verbose:
                pbar.set_description(f"Loss {loss.item():6f}")
