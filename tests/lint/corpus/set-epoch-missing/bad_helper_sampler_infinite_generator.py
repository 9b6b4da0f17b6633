from torch.utils import data


def data_sampler(dataset, shuffle, distributed):
    if distributed:
        return data.distributed.DistributedSampler(dataset, shuffle=shuffle)  # expect: set-epoch-missing
    if shuffle:
        return data.RandomSampler(dataset)
    return data.SequentialSampler(dataset)


def cycle(dl):
    while True:
        for batch in dl:
            yield batch


def train(args, dataset, model, optimizer):
    loader = data.DataLoader(dataset, batch_size=8, sampler=data_sampler(dataset, True, args.distributed))
    batches = cycle(loader)
    for step in range(args.iters):
        loss = model(next(batches))
        loss.backward()
        optimizer.step()
