import torch.utils.data as data


class Runner:
    def __init__(self, ds):
        self.train_loader = data.DataLoader(ds, sampler=data.DistributedSampler(ds, shuffle=True))  # expect: set-epoch-missing

    def fit(self, model, opt, n_epochs):
        for ep in range(n_epochs):
            for x in self.train_loader:
                model(x).sum().backward()
                opt.step()
