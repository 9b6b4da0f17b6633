from torch.utils.data import DataLoader, DistributedSampler


def main(model, ds, opt):
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, sampler=sampler)
    for batch in loader:
        model(batch).loss.backward()
        opt.step()
        opt.zero_grad()
