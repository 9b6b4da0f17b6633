from torch.nn.parallel import DistributedDataParallel


def wrap(model, local_rank):
    options = dict(device_ids=[local_rank], find_unused_parameters=True)  # expect: find-unused-true
    return DistributedDataParallel(model, **options)
