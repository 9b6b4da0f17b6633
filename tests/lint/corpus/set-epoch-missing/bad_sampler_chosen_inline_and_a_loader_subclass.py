# The shuffling DistributedSampler is chosen inline in the loader's keyword (``... if ddp else
# None``), and a second loader is a DataLoader subclass of this file (a prefetching loader); no
# set_epoch anywhere, both re-iterated every epoch.
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class DataLoaderX(DataLoader):
    def __iter__(self):
        return super().__iter__()


def main(config, model, dataset_train, dataset_aux, optimizer):
    model = DDP(model, device_ids=[config.local_rank])
    train_loader = DataLoader(
        dataset_train,
        batch_size=8,
        sampler=DistributedSampler(dataset_train, shuffle=True) if config.ddp else None,  # expect: set-epoch-missing
        shuffle=not config.ddp,
    )
    aux_sampler = DistributedSampler(dataset_aux, shuffle=True)  # expect: set-epoch-missing
    aux_loader = DataLoaderX(dataset_aux, batch_size=8, sampler=aux_sampler)
    for epoch in range(config.n_epochs):
        for (x, y), (a, b) in zip(train_loader, aux_loader):
            loss = torch.nn.functional.mse_loss(model(x), y) + torch.nn.functional.mse_loss(model(a), b)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
