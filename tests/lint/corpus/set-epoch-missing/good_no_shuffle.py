from torch.utils.data import DataLoader, DistributedSampler


def main(model, ds, opt):
    sampler = DistributedSampler(ds, shuffle=False)
    loader = DataLoader(ds, sampler=sampler)
    for epoch in range(3):
        for batch in loader:
            model(batch).loss.backward()
            opt.step()
