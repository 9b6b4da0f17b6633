# The variable's latest value before the wrap is a config read whose fallback is False (or a
# plain config attribute): the configuration decides, nothing is True by default.
from torch.nn.parallel import DistributedDataParallel


def wrap(model, opt, cfg):
    find_unused = opt.get("find_unused_parameters", True)
    find_unused = opt.get("find_unused_parameters", False)
    model = DistributedDataParallel(model, find_unused_parameters=find_unused)
    strict = getattr(cfg, "find_unused_parameters", None)
    return DistributedDataParallel(model, find_unused_parameters=strict)
