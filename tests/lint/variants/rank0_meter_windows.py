"""A meter's window read after a sync that covers only its count and total (round 25): the
torchvision-references ``SmoothedValue`` (DETR, DeiT, MAE ...) all-reduces ``count`` and ``total`` in
``synchronize_between_processes`` and leaves its deque alone, so after the sync ``global_avg`` is
global while ``avg``/``median``/``value`` are this rank's window (CognitiveDistillation's and DDAug's
rank-0 ``logger.info`` of ``metric_logger.meters['loss'].avg``; BDCI's ``latest_meter()``). Read from
the project's own meter class: a sync that rebuilds the deque leaves nothing local, and the synced
``global_avg`` is no finding. The DeiT-family ``log_every`` print is not changed by this."""

from tests.lint.variants.rank0_structure import HEAD, SETUP, STEP

R = "rank0-only-loss-log"
C = {}

MISC = '''
from collections import defaultdict, deque
import torch
import torch.distributed as dist


class SmoothedValue(object):
    def __init__(self, window_size=20, fmt=None):
        self.deque = deque(maxlen=window_size)
        self.total = 0.0
        self.count = 0
        self.fmt = fmt or "{median:.4f} ({global_avg:.4f})"

    def update(self, value, n=1):
        self.deque.append(value)
        self.count += n
        self.total += value * n

    def synchronize_between_processes(self):
        """Warning: does not synchronize the deque!"""
        t = torch.tensor([self.count, self.total], dtype=torch.float64, device="cuda")
        dist.barrier()
        dist.all_reduce(t)
        t = t.tolist()
        self.count = int(t[0])
        self.total = t[1]
        SYNC_DEQUE

    @property
    def median(self):
        return torch.tensor(list(self.deque)).median().item()

    @property
    def avg(self):
        return torch.tensor(list(self.deque), dtype=torch.float32).mean().item()

    @property
    def global_avg(self):
        return self.total / self.count

    @property
    def value(self):
        return self.deque[-1]

    def __str__(self):
        return self.fmt.format(median=self.median, global_avg=self.global_avg)


class MetricLogger(object):
    def __init__(self, delimiter="\\t"):
        self.meters = defaultdict(SmoothedValue)
        self.delimiter = delimiter

    def update(self, **kwargs):
        for k, v in kwargs.items():
            if isinstance(v, torch.Tensor):
                v = v.item()
            self.meters[k].update(v)

    def latest_meter(self, prefix=""):
        latest = {}
        for name, meter in self.meters.items():
            latest.update({prefix + name: getattr(meter, "value")})
        return latest

    def synchronize_between_processes(self):
        for meter in self.meters.values():
            meter.synchronize_between_processes()
'''
PARTIAL = MISC.replace("SYNC_DEQUE", "pass")
# a sync that gathers every rank's window back into the deque: every statistic is global
FULL = MISC.replace(
    "SYNC_DEQUE",
    "window = [None] * dist.get_world_size()\n"
    "        dist.all_gather_object(window, list(self.deque))\n"
    "        self.deque = deque([v for w in window for v in w], maxlen=self.deque.maxlen)",
)

TRAIN = (
    HEAD.replace("import wandb\n", "import wandb\nimport misc\n")
    + SETUP
    + """    metric_logger = misc.MetricLogger(delimiter="  ")
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
"""
    + STEP
    + """            metric_logger.update(loss=loss.item())
            if step % args.log_frequency == 0:
                metric_logger.synchronize_between_processes()
                payload = {"loss_avg": READ}
                if dist.get_rank() == 0:
                    logger.info(payload)
"""
)


def case(read, misc=PARTIAL):
    return {"train.py": TRAIN.replace("READ", read), "misc.py": misc}


C["window_avg_after_count_total_sync"] = (R, True, case("metric_logger.meters['loss'].avg"), "train.py")
C["window_median_through_getattr_meter"] = (R, True, case("metric_logger.loss.median"), "train.py")
C["window_latest_meter_of_container"] = (
    R,
    True,
    case("metric_logger.latest_meter(prefix='train/')"),
    "train.py",
)
C["NEG_global_avg_after_count_total_sync"] = (
    R,
    False,
    case("metric_logger.meters['loss'].global_avg"),
    "train.py",
)
C["NEG_window_avg_after_a_sync_that_gathers_the_window"] = (
    R,
    False,
    case("metric_logger.meters['loss'].avg", FULL),
    "train.py",
)
C["NEG_lr_window_after_count_total_sync"] = (
    R,
    False,
    case("metric_logger.meters['lr'].avg"),
    "train.py",
)
# the DeiT-family epoch line: ``print`` of the whole logger after the sync (the corpus convention
# leaves the ``log_every``/``Averaged stats`` print unlabelled)
C["NEG_whole_logger_printed_after_sync"] = (R, False, case("str(metric_logger)"), "train.py")

# CognitiveDistillation's shape: the step's loss all-reduced beside the meter's window in one dict;
# the reduced loss alone in it is no finding
MIXED = TRAIN.replace(
    "                metric_logger.synchronize_between_processes()\n",
    "                loss_value = loss.item()\n"
    "                t = torch.tensor(loss_value).cuda()\n"
    "                dist.all_reduce(t)\n"
    "                loss_value = reduce_mean(loss_value)\n"
    "                metric_logger.synchronize_between_processes()\n",
).replace('payload = {"loss_avg": READ}', 'payload = {"loss": loss_value, READ}')
MIXED = MIXED.replace("import misc\n", "import misc\nfrom misc import reduce_mean\n")
MISC_REDUCE = (
    PARTIAL
    + """

def reduce_mean(x):
    t = torch.tensor(x).cuda()
    dist.all_reduce(t)
    return (t / dist.get_world_size()).item()
"""
)
C["window_avg_beside_the_reduced_loss"] = (
    R,
    True,
    {
        "train.py": MIXED.replace("READ", "\"loss_avg\": metric_logger.meters['loss'].avg"),
        "misc.py": MISC_REDUCE,
    },
    "train.py",
)
C["NEG_reduced_loss_beside_the_global_avg"] = (
    R,
    False,
    {
        "train.py": MIXED.replace("READ", "\"loss_avg\": metric_logger.meters['loss'].global_avg"),
        "misc.py": MISC_REDUCE,
    },
    "train.py",
)
