from tests.lint.variants.rank0_structure import HEAD

CLS = (
    HEAD
    + """
class Trainer:
    def __init__(self, args, net, loader):
        dist.init_process_group("nccl")
{INIT}
        self.model = DDP(net.cuda())
        self.loader = loader
        self.optimizer = torch.optim.AdamW(self.model.parameters())
        self.criterion = nn.CrossEntropyLoss()

    def train(self, epochs):
        for epoch in range(epochs):
            for step, (x, y) in enumerate(self.loader):
                loss = self.criterion(self.model(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                if {GUARD}:
                    {SINK}
{EXTRA}"""
)
R = "rank0-only-loss-log"
GUARDS = {
    "self_rank": ("        self.rank = dist.get_rank()", "self.rank == 0", ""),
    "self_local_rank_in": ("        self.args = args", "self.args.local_rank in [-1, 0]", ""),
    "self_is_main": ("        self.is_main = dist.get_rank() == 0", "self.is_main", ""),
    "self_is_master_method": (
        "        pass",
        "self.is_master()",
        "\n    def is_master(self):\n        return dist.get_rank() == 0\n",
    ),
    "property": (
        "        pass",
        "self.is_main_process",
        "\n    @property\n    def is_main_process(self):\n        return dist.get_rank() == 0\n",
    ),
    "or_not_init": ("        pass", "not dist.is_initialized() or dist.get_rank() == 0", ""),
    "global_rank": ("        self.global_rank = int(os.environ['RANK'])", "self.global_rank == 0", ""),
    "not_self_rank": ("        self.rank = dist.get_rank()", "not self.rank", ""),
    "args_gpu": ("        self.args = args", "self.args.gpu == 0", ""),
    "rank_lt_1": ("        self.rank = dist.get_rank()", "self.rank < 1", ""),
}
SINKS = {
    "print": "print(f'loss {loss.item():.4f}')",
    "self_log": "self.log_metrics({'loss': loss.item()}, step)",
    "self_writer": "self.writer.add_scalar('loss', loss.item(), step)",
    "logger": "logger.info('loss %.4f', loss.item())",
}
EXTRA_SINK = {
    "self_log": "\n    def log_metrics(self, metrics, step):\n        for k, v in metrics.items():\n            print(f'{step} {k}={v:.4f}')\n",
    "self_writer": "",
}
C = {}


def render(g, s):
    init, guard, extra = GUARDS[g]
    if s == "self_writer":
        init = init + "\n        self.writer = SummaryWriter()"
    return (
        CLS.replace("{INIT}", init)
        .replace("{GUARD}", guard)
        .replace("{SINK}", SINKS[s])
        .replace("{EXTRA}", extra + EXTRA_SINK.get(s, ""))
    )


for g in GUARDS:
    C[f"guard_{g}"] = (R, True, {"train.py": render(g, "print")}, "train.py")
for s in SINKS:
    C[f"sink_{s}"] = (R, True, {"train.py": render("self_rank", s)}, "train.py")
LIGHTNING = """
import torch
import torch.nn as nn
import pytorch_lightning as pl


class Editor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 2)
        self.margin = 1.0

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        kl = loss * 0.1
        total = loss + (kl - self.margin)
        self.log("kl", kl, on_step=True)
        return total

    def on_validation_epoch_end(self):
        self.margin = max(self.margin * 0.8, 0.1)
        self.log("margin", self.margin, on_epoch=True)


def main():
    trainer = pl.Trainer(accelerator="gpu", devices=4, strategy="ddp")
    trainer.fit(Editor())
"""
C["lightning_training_step_log"] = (R, True, {"train.py": LIGHTNING}, "train.py")
C["NEG_lightning_validation_hook_log"] = (
    R,
    False,
    {"train.py": LIGHTNING.replace('        self.log("kl", kl, on_step=True)\n', "")},
    "train.py",
)
