"""CPU/gloo shim for the real-script corpus (tests/realscripts/harness.py): lets public GPU scripts run
unmodified on a CPU-only machine. It is the only thing between the script and torch besides the
probe, and it is applied identically to the bare and the probed run, so it cannot explain a
difference between them.

The harness puts this directory on PYTHONPATH and names the parts it wants in
DDP_REALSCRIPTS_SHIM (comma-separated):
  cpu        cuda devices -> cpu: `.to(i)`, `.to("cuda:i")`, `.cuda()`, `torch.cuda.set_device`,
             `DistributedDataParallel(device_ids=[i])`, `torch.load(map_location="cuda:i")`,
             `pin_memory()`; the nccl backend -> gloo.
  gpus=N     `torch.cuda.device_count()` answers N (scripts that size their world by it).
  accel=N    `torch.accelerator` reports N devices of type cpu (scripts that refuse to start
             without two accelerators); the device index calls do nothing.
  fakedata=N torchvision's `FakeData` holds at most N samples (the script has no flag for it).
  seed=N     torch, random and numpy seeded with N + RANK at torch import: torch 2.13 starts each
             process from a random seed, so an unseeded script differs run to run; seeded, the bare
             and the probed run can be compared bit for bit. Ranks keep different seeds, as
             unseeded ranks have (processes started by mp.spawn have no RANK: they share N).
Under `ddp-doctor run`, the probe's sitecustomize runs this one first (it chains the shadowed
sitecustomize). The patches are applied right after `import torch` finishes, whoever imports it
first, so the script's own import order is kept (a probe bug that depends on it stays visible).
"""

import os
import sys

_PARTS = dict(
    (p.split("=", 1) + [""])[:2] for p in os.environ.get("DDP_REALSCRIPTS_SHIM", "").split(",") if p
)


def _cpu(device):
    """The CPU stand-in for a cuda device argument; anything else unchanged."""
    import torch

    if isinstance(device, int) and not isinstance(device, bool):
        return torch.device("cpu")
    if isinstance(device, str) and device.startswith("cuda"):
        return torch.device("cpu")
    if isinstance(device, torch.device) and device.type == "cuda":
        return torch.device("cpu")
    return device


def _patch_cpu():
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    def to_args(args, kwargs):
        if args:
            args = (_cpu(args[0]),) + tuple(args[1:])
        if "device" in kwargs:
            kwargs["device"] = _cpu(kwargs["device"])
        return args, kwargs

    tensor_to = torch.Tensor.to

    def tensor_to_cpu(self, *args, **kwargs):
        args, kwargs = to_args(args, kwargs)
        return tensor_to(self, *args, **kwargs)

    module_to = torch.nn.Module.to

    def module_to_cpu(self, *args, **kwargs):
        args, kwargs = to_args(args, kwargs)
        return module_to(self, *args, **kwargs)

    def tensor_cuda(self, *args, **kwargs):
        return self

    def module_cuda(self, *args, **kwargs):
        return self

    torch.Tensor.to = tensor_to_cpu
    torch.nn.Module.to = module_to_cpu
    torch.Tensor.cuda = tensor_cuda
    torch.nn.Module.cuda = module_cuda
    torch.Tensor.pin_memory = lambda self, *a, **k: self
    torch.cuda.set_device = lambda device: None

    ddp_init = DistributedDataParallel.__init__

    def ddp_init_cpu(self, module, *args, **kwargs):
        kwargs.pop("device_ids", None)
        kwargs.pop("output_device", None)
        if args:  # device_ids, output_device given by position
            args = (None, None) + tuple(args[2:])
        ddp_init(self, module, *args, **kwargs)

    DistributedDataParallel.__init__ = ddp_init_cpu

    load = torch.load

    def load_cpu(*args, **kwargs):
        location = kwargs.get("map_location")
        if location is not None and not callable(location) and not isinstance(location, dict):
            kwargs["map_location"] = _cpu(location)
        return load(*args, **kwargs)

    torch.load = load_cpu

    init_process_group = dist.init_process_group

    def init_gloo(*args, **kwargs):
        if args and isinstance(args[0], str) and "nccl" in args[0]:
            args = ("gloo",) + tuple(args[1:])
        if isinstance(kwargs.get("backend"), str) and "nccl" in kwargs["backend"]:
            kwargs["backend"] = "gloo"
        if isinstance(kwargs.get("device_id"), torch.device) and kwargs["device_id"].type != "cuda":
            kwargs.pop("device_id")  # gloo takes no device_id for cpu
        return init_process_group(*args, **kwargs)

    dist.init_process_group = init_gloo
    torch.distributed.distributed_c10d.init_process_group = init_gloo


def _patch_gpus(n):
    import torch

    torch.cuda.device_count = lambda: n


def _patch_accel(n):
    import torch

    torch.accelerator.is_available = lambda: True
    torch.accelerator.device_count = lambda: n
    torch.accelerator.current_accelerator = lambda check_available=False: torch.device("cpu")
    torch.accelerator.set_device_index = lambda device: None
    torch.accelerator.device_index = lambda device: _NullContext()


class _NullContext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _patch_fakedata(n):
    try:
        import torchvision.datasets as datasets
    except ImportError:
        return
    init = datasets.FakeData.__init__

    def small(self, size=1000, *args, **kwargs):
        init(self, min(size, n), *args, **kwargs)

    datasets.FakeData.__init__ = small


def _seed(n):
    import random

    import torch

    seed = n + int(os.environ.get("RANK", "0") or 0)
    torch.manual_seed(seed)
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)


def _apply():
    if "seed" in _PARTS:
        _seed(int(_PARTS["seed"]))
    if "cpu" in _PARTS:
        _patch_cpu()
    if "gpus" in _PARTS:
        _patch_gpus(int(_PARTS["gpus"]))
    if "accel" in _PARTS:
        _patch_accel(int(_PARTS["accel"]))


def _after(module, callback):
    """A meta-path finder that runs `callback` once `module` has executed. It stays installed
    until then, so a `find_spec(module)` whose spec is never used (datasets and transformers ask
    for torch's spec before importing it) does not lose it."""

    class After:
        done = False

        def find_spec(self, name, path=None, target=None):
            if name != module or self.done:
                return None
            index = sys.meta_path.index(self)
            for finder in sys.meta_path[index + 1 :]:
                find = getattr(finder, "find_spec", None)
                spec = find(name, path, target) if find else None
                if spec is not None:
                    break
            else:
                return None
            if spec.loader is None:
                return spec
            exec_module = spec.loader.exec_module
            owner = self

            def exec_then_callback(mod):
                exec_module(mod)
                if not owner.done:
                    owner.done = True
                    callback()

            spec.loader.exec_module = exec_then_callback
            return spec

    return After()


if _PARTS:
    if "torch" in sys.modules:
        _apply()
    else:
        sys.meta_path.insert(0, _after("torch", _apply))
    if "fakedata" in _PARTS:
        sys.meta_path.insert(
            0, _after("torchvision.datasets", lambda: _patch_fakedata(int(_PARTS["fakedata"])))
        )
