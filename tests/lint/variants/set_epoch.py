HEAD = """
import os
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm
"""
SETUP = """
def main(args, dataset, net):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DDP(net.cuda(), device_ids=[local_rank])
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""
STEP = """            out = model(x.cuda())
            loss = criterion(out, y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def one(body, extra=""):
    return {"train.py": HEAD + extra + SETUP + body}


R = "set-epoch-missing"
C = {}
C["canon"] = (
    R,
    True,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["inline_sampler"] = (
    R,
    True,
    one(
        """
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["while_epoch"] = (
    R,
    True,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    epoch = 0
    while epoch < args.epochs:
        for x, y in loader:
"""
        + STEP
        + """        epoch += 1
"""
    ),
    "train.py",
)
C["tqdm_enumerate"] = (
    R,
    True,
    one(
        """
    sampler = DistributedSampler(dataset, shuffle=True)
    train_loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.start_epoch, args.epochs):
        for i, (x, y) in enumerate(tqdm(train_loader)):
"""
        + STEP.replace("            ", "        ", 0)
    ),
    "train.py",
)
C["range_tqdm"] = (
    R,
    True,
    one(
        """
    sampler = DistributedSampler(dataset, num_replicas=dist.get_world_size(), rank=dist.get_rank())
    loader = torch.utils.data.DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in tqdm(range(args.epochs)):
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["iter_next"] = (
    R,
    True,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        it = iter(loader)
        for _ in range(len(loader)):
            x, y = next(it)
"""
        + STEP
    ),
    "train.py",
)
C["steps_while"] = (
    R,
    True,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    step = 0
    while step < args.max_steps:
        for x, y in loader:
"""
        + STEP
        + """            step += 1
"""
    ),
    "train.py",
)
TRAIN_EPOCH = """
def train_one_epoch(model, loader, optimizer, criterion):
    model.train()
    for x, y in loader:
        out = model(x.cuda())
        loss = criterion(out, y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""
C["helper_same_file"] = (
    R,
    True,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer, criterion)
""",
        TRAIN_EPOCH,
    ),
    "train.py",
)
C["helper_other_file"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from engine import train_one_epoch\n"
        + SETUP
        + """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer, criterion)
""",
        "engine.py": "import torch\n" + TRAIN_EPOCH,
    },
    "train.py",
)
C["helper_other_file_sets_epoch_NEG"] = (
    R,
    False,
    {
        "train.py": HEAD
        + "from engine import train_one_epoch\n"
        + SETUP
        + """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer, criterion, epoch)
""",
        "engine.py": "import torch\n"
        + TRAIN_EPOCH.replace(
            "criterion):\n    model.train()",
            "criterion, epoch):\n    loader.sampler.set_epoch(epoch)\n    model.train()",
        ),
    },
    "train.py",
)
BUILD = """
def build_loader(dataset, batch_size):
    sampler = DistributedSampler(dataset)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)
"""
C["builder_same_file"] = (
    R,
    True,
    one(
        """
    loader = build_loader(dataset, 8)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        BUILD,
    ),
    "train.py",
)
C["builder_other_file"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from data import build_loader\n"
        + SETUP
        + """
    loader = build_loader(dataset, 8)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        "data.py": HEAD + BUILD,
    },
    "train.py",
)
C["builder_other_file_tuple"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from data import build_loaders\n"
        + SETUP
        + """
    train_loader, val_loader = build_loaders(dataset, dataset)
    for epoch in range(args.epochs):
        for x, y in train_loader:
"""
        + STEP,
        "data.py": HEAD
        + """
def build_loaders(train_set, val_set):
    train_sampler = DistributedSampler(train_set)
    train_loader = DataLoader(train_set, batch_size=8, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=8)
    return train_loader, val_loader
""",
    },
    "train.py",
)
C["builder_module_attr"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "import data\n"
        + SETUP
        + """
    loader = data.build_loader(dataset, 8)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        "data.py": HEAD + BUILD,
    },
    "train.py",
)
C["builder_alias_ifexp"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "import data\n"
        + SETUP
        + """
    get_loader = data.build_loader if args.distributed else data.build_plain_loader
    loader = get_loader(dataset, 8)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        "data.py": HEAD
        + BUILD
        + """
def build_plain_loader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, shuffle=True)
""",
    },
    "train.py",
)
TRAINER = (
    HEAD
    + """
class Trainer:
    def __init__(self, model, dataset, args):
        self.model = model
        self.args = args
        self.sampler = DistributedSampler(dataset)
        self.train_loader = DataLoader(dataset, batch_size=8, sampler=self.sampler)
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.criterion = nn.CrossEntropyLoss()

    def train_epoch(self, epoch):
        for x, y in self.train_loader:
            out = self.model(x.cuda())
            loss = self.criterion(out, y.cuda())
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def fit(self):
        for epoch in range(self.args.epochs):
            self.train_epoch(epoch)
"""
)
C["trainer_class"] = (
    R,
    True,
    {
        "trainer.py": TRAINER,
        "train.py": HEAD
        + "from trainer import Trainer\n"
        + SETUP
        + """
    Trainer(model, dataset, args).fit()
""",
    },
    "trainer.py",
)
C["trainer_class_NEG"] = (
    R,
    False,
    {
        "trainer.py": TRAINER.replace(
            "    def train_epoch(self, epoch):\n",
            "    def train_epoch(self, epoch):\n        self.sampler.set_epoch(epoch)\n",
        ),
        "train.py": HEAD
        + "from trainer import Trainer\n"
        + SETUP
        + """
    Trainer(model, dataset, args).fit()
""",
    },
    "trainer.py",
)
C["trainer_loader_handed"] = (
    R,
    True,
    {
        "trainer.py": HEAD
        + """
class Trainer:
    def __init__(self, model, train_loader, epochs):
        self.model = model
        self.train_loader = train_loader
        self.epochs = epochs
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def fit(self):
        for epoch in range(self.epochs):
            for x, y in self.train_loader:
                loss = self.model(x).mean()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
""",
        "train.py": HEAD
        + "from trainer import Trainer\n"
        + SETUP
        + """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    Trainer(model, loader, args.epochs).fit()
""",
    },
    "train.py",
)
C["cycle_generator"] = (
    R,
    True,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    batches = cycle(loader)
    for step in range(args.max_steps):
        x, y = next(batches)
"""
        + STEP.replace("            ", "        "),
        """
def cycle(loader):
    while True:
        for batch in loader:
            yield batch
""",
    ),
    "train.py",
)
C["dict_loaders"] = (
    R,
    True,
    one(
        """
    samplers = {"train": DistributedSampler(dataset)}
    loaders = {"train": DataLoader(dataset, batch_size=8, sampler=samplers["train"])}
    for epoch in range(args.epochs):
        for x, y in loaders["train"]:
"""
        + STEP
    ),
    "train.py",
)
C["dict_entry_assigned"] = (
    R,
    True,
    one(
        """
    loaders = {}
    loaders["train"] = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    for epoch in range(args.epochs):
        for x, y in loaders["train"]:
"""
        + STEP
    ),
    "train.py",
)
# the torchvision fine-tuning tutorial made distributed: loaders and samplers by phase
TUTORIAL_STEP = """                out = model(x.cuda())
                loss = criterion(out, y.cuda())
                optimizer.zero_grad()
                if phase == "train":
                    loss.backward()
                    optimizer.step()
"""
C["dict_by_phase"] = (
    R,
    True,
    one(
        """
    dsets = {"train": dataset, "val": dataset}
    samplers = {x: DistributedSampler(dsets[x]) for x in ["train", "val"]}
    dataloaders = {x: DataLoader(dsets[x], batch_size=8, sampler=samplers[x]) for x in ["train", "val"]}
    for epoch in range(args.epochs):
        for phase in ["train", "val"]:
            model.train(phase == "train")
            for x, y in dataloaders[phase]:
"""
        + TUTORIAL_STEP
    ),
    "train.py",
)
C["NEG_dict_by_phase_set_epoch"] = (
    R,
    False,
    {
        "train.py": C["dict_by_phase"][2]["train.py"].replace(
            "    for epoch in range(args.epochs):\n",
            '    for epoch in range(args.epochs):\n        samplers["train"].set_epoch(epoch)\n',
        )
    },
    "train.py",
)
C["NEG_dict_by_phase_val_only"] = (
    R,
    False,
    one(
        """
    dsets = {"train": dataset, "val": dataset}
    loaders = {"train": DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, shuffle=False)),
               "val": DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))}
    for epoch in range(args.epochs):
        for x, y in loaders["train"]:
"""
        + STEP
    ),
    "train.py",
)
C["epoch_typo"] = (
    R,
    True,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epoch):
        sampler.set_epoch(args.epoch)
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["epoch_constant"] = (
    R,
    True,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    start_epoch = 0
    for epoch in range(start_epoch, args.epochs):
        loader.sampler.set_epoch(start_epoch)
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["NEG_epoch_reset_before_eval"] = (
    R,
    False,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
"""
        + STEP
        + """        sampler.set_epoch(0)
"""
    ),
    "train.py",
)
C["NEG_epoch_counter_in_loop"] = (
    R,
    False,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    args.current_epoch = 0
    while args.current_epoch < args.epochs:
        sampler.set_epoch(args.current_epoch)
        for x, y in loader:
"""
        + STEP
        + """        args.current_epoch += 1
"""
    ),
    "train.py",
)
C["NEG_epoch_set_by_helper"] = (
    R,
    False,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        advance(args, epoch)
        sampler.set_epoch(args.cur_epoch)
        for x, y in loader:
"""
        + STEP,
        extra="""
def advance(args, epoch):
    args.cur_epoch = epoch
""",
    ),
    "train.py",
)
# the torchvision fine-tuning tutorial's ``train_model`` handed the dicts by phase, made distributed
TUTORIAL_TRAIN_MODEL = """import os
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train_model(model, dataloaders, dataset_sizes, criterion, optimizer, num_epochs, rank):
    for epoch in range(num_epochs):
        for phase in ["train", "val"]:
            if phase == "train":
                model.train()
            else:
                model.eval()
            running_loss = 0.0
            for inputs, labels in dataloaders[phase]:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                running_loss += loss.item() * inputs.size(0)
            epoch_loss = running_loss / dataset_sizes[phase]
            if rank == 0:
                print("{} Loss: {:.4f}".format(phase, epoch_loss))
    return model


def main(net, image_datasets):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    model = DDP(net.cuda(), device_ids=[int(os.environ["LOCAL_RANK"])])
    samplers = {x: DistributedSampler(image_datasets[x]) for x in ["train", "val"]}
    dataloaders = {x: DataLoader(image_datasets[x], batch_size=4, sampler=samplers[x]) for x in ["train", "val"]}
    dataset_sizes = {x: len(image_datasets[x]) for x in ["train", "val"]}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    train_model(model, dataloaders, dataset_sizes, nn.CrossEntropyLoss(), optimizer, 25, rank)
"""
C["tutorial_train_model"] = (R, True, {"train.py": TUTORIAL_TRAIN_MODEL}, "train.py")
C["NEG_tutorial_train_model_set_epoch"] = (
    R,
    False,
    {
        "train.py": TUTORIAL_TRAIN_MODEL.replace(
            "    for epoch in range(num_epochs):\n",
            '    for epoch in range(num_epochs):\n        dataloaders["train"].sampler.set_epoch(epoch)\n',
        )
    },
    "train.py",
)
# batch samplers drawing from the DistributedSampler: torch's BatchSampler, a project's bucketing one
BATCH_SAMPLER = (
    """
    sampler = DistributedSampler(dataset)
    batch_sampler = torch.utils.data.BatchSampler(sampler, 8, drop_last=True)
    loader = DataLoader(dataset, batch_sampler=batch_sampler)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
    + STEP
)
C["batch_sampler"] = (R, True, one(BATCH_SAMPLER), "train.py")
C["bucket_batch_sampler"] = (
    R,
    True,
    one(
        BATCH_SAMPLER.replace(
            "batch_sampler = torch.utils.data.BatchSampler(sampler, 8, drop_last=True)",
            "buckets = BucketBatchSampler(sampler, 8, False, len, dataset)",
        ).replace("batch_sampler=batch_sampler", "batch_sampler=buckets"),
        extra="from buckets import BucketBatchSampler\n",
    ),
    "train.py",
)
C["batch_sampler_inline"] = (
    R,
    True,
    one(
        """
    loader = DataLoader(dataset, batch_sampler=torch.utils.data.BatchSampler(DistributedSampler(dataset), 8, False))
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["bucket_batch_sampler_builder_other_file"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from data import build_loader\n"
        + SETUP
        + """
    loader = build_loader(dataset, args.local_rank)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        "data.py": HEAD
        + """
from buckets import BucketBatchSampler


def build_loader(dataset, local_rank):
    sampler = DistributedSampler(dataset) if local_rank != -1 else torch.utils.data.RandomSampler(dataset)
    batch_sampler = BucketBatchSampler(sampler, 8, False, len, dataset)
    return DataLoader(dataset, batch_sampler=batch_sampler)
""",
    },
    "train.py",
)
C["NEG_batch_sampler_set_epoch"] = (
    R,
    False,
    {
        "train.py": C["batch_sampler"][2]["train.py"].replace(
            "    for epoch in range(args.epochs):\n",
            "    for epoch in range(args.epochs):\n        sampler.set_epoch(epoch)\n",
        )
    },
    "train.py",
)
C["NEG_batch_sampler_no_shuffle"] = (
    R,
    False,
    {
        "train.py": C["batch_sampler"][2]["train.py"].replace(
            "DistributedSampler(dataset)", "DistributedSampler(dataset, shuffle=False)"
        )
    },
    "train.py",
)
C["NEG_set_epoch"] = (
    R,
    False,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["NEG_loader_sampler_set_epoch"] = (
    R,
    False,
    one(
        """
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["NEG_shuffle_false"] = (
    R,
    False,
    one(
        """
    sampler = DistributedSampler(dataset, shuffle=False)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["NEG_single_pass"] = (
    R,
    False,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for x, y in loader:
"""
        + STEP.replace("            ", "        ")
    ),
    "train.py",
)
C["NEG_val_only"] = (
    R,
    False,
    one(
        """
    train_sampler = DistributedSampler(dataset)
    train_loader = DataLoader(dataset, batch_size=8, sampler=train_sampler)
    val_loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        for x, y in train_loader:
"""
        + STEP
        + """        model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                model(x)
"""
    ),
    "train.py",
)
SAMPLER_HELPER = """
def data_sampler(dataset, shuffle, distributed):
    if distributed:
        return DistributedSampler(dataset, shuffle=shuffle)
    if shuffle:
        return torch.utils.data.RandomSampler(dataset)
    return torch.utils.data.SequentialSampler(dataset)
"""
SAMPLER_USE = """
    sampler = dist_utils.data_sampler(dataset, shuffle={SHUFFLE}, distributed=args.distributed)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
C["sampler_helper_other_file"] = (
    R,
    True,
    {
        "train.py": HEAD + "import dist_utils\n" + SETUP + SAMPLER_USE.replace("{SHUFFLE}", "True") + STEP,
        "dist_utils.py": HEAD + SAMPLER_HELPER,
    },
    "train.py",
)
C["NEG_sampler_helper_no_shuffle"] = (
    R,
    False,
    {
        "train.py": HEAD + "import dist_utils\n" + SETUP + SAMPLER_USE.replace("{SHUFFLE}", "False") + STEP,
        "dist_utils.py": HEAD + SAMPLER_HELPER,
    },
    "train.py",
)
C["NEG_sampler_helper_set_epoch"] = (
    R,
    False,
    {
        "train.py": HEAD
        + "import dist_utils\n"
        + SETUP
        + SAMPLER_USE.replace("{SHUFFLE}", "True").replace(
            "    for epoch in range(args.epochs):\n",
            "    for epoch in range(args.epochs):\n        sampler.set_epoch(epoch)\n",
        )
        + STEP,
        "dist_utils.py": HEAD + SAMPLER_HELPER,
    },
    "train.py",
)
C["NEG_trainer_loader_dataset_reshuffled"] = (
    R,
    False,
    {
        "trainer.py": C["trainer_loader_handed"][2]["trainer.py"].replace(
            "            for x, y in self.train_loader:\n",
            "            self.train_loader.dataset.shuffle(epoch)\n            for x, y in self.train_loader:\n",
        ),
        "train.py": C["trainer_loader_handed"][2]["train.py"],
    },
    "train.py",
)
C["NEG_val_loader_sampler"] = (
    R,
    False,
    one(
        """
    train_sampler = DistributedSampler(dataset)
    train_loader = DataLoader(dataset, batch_size=8, sampler=train_sampler)
    val_loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        for x, y in train_loader:
"""
        + STEP
        + """        for x, y in val_loader:
            loss = criterion(model(x), y)
            loss.backward()
"""
    ),
    "train.py",
)

# Round 22: three files — a builder returns the loader over a DistributedSampler, the entry script
# hands it on, a training loop of a third file draws it every epoch (comp4471's ``configure_data``,
# ``main.py``, ``train_loop``). Reported at that loop.
THREE_FILES_LOOP = """
import torch


def train_epoch(model, data_loader, optimizer, criterion):
    for x, y in data_loader:
        loss = criterion(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def train_loop(model, loader_train, optimizer, criterion, num_epochs):
    for epoch in range(num_epochs):
        train_epoch(model, data_loader=loader_train, optimizer=optimizer, criterion=criterion)
"""
THREE_FILES_MAIN = (
    HEAD
    + "from data.loader import configure_data\nfrom engine.train import train_loop\n"
    + SETUP
    + """
    loader_train, loader_val = configure_data(dataset)
    train_loop(model, loader_train=loader_train, optimizer=optimizer, criterion=criterion, num_epochs=args.epochs)
"""
)
THREE_FILES_DATA = (
    HEAD
    + """
def configure_data(dataset):
    sampler_train = DistributedSampler(dataset=dataset, shuffle=True)
    loader_train = DataLoader(dataset, batch_size=8, sampler=sampler_train)
    loader_val = DataLoader(dataset, batch_size=8)
    return loader_train, loader_val
"""
)


def three_files(main=THREE_FILES_MAIN, loop=THREE_FILES_LOOP):
    return {
        "main.py": main,
        "data/__init__.py": "",
        "data/loader.py": THREE_FILES_DATA,
        "engine/__init__.py": "",
        "engine/train.py": loop,
    }


C["builder_loader_handed_to_another_files_epoch_loop"] = (R, True, three_files(), "engine/train.py")
C["NEG_handed_loader_sets_its_epoch"] = (
    R,
    False,
    three_files(
        loop=THREE_FILES_LOOP.replace(
            "    for epoch in range(num_epochs):\n",
            "    for epoch in range(num_epochs):\n        loader_train.sampler.set_epoch(epoch)\n",
        )
    ),
    "engine/train.py",
)
C["NEG_handed_loader_is_the_validation_one"] = (
    R,
    False,
    three_files(main=THREE_FILES_MAIN.replace("loader_train=loader_train", "loader_train=loader_val")),
    "engine/train.py",
)
C["NEG_one_call_hands_a_plain_loader"] = (
    R,
    False,
    three_files(
        main=THREE_FILES_MAIN
        + "    train_loop(model, loader_train=DataLoader(dataset), optimizer=optimizer, criterion=criterion, num_epochs=1)\n"
    ),
    "engine/train.py",
)


# LLM_Train: a builder dispatching on a dataset name builds its DistributedSampler in one branch only;
# the script's call picks that branch (flagged) or another one that shards by rank itself (not)
DISPATCH = """
def load_data(dataset, kind="toy"):
    if kind == "toy":
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    elif kind == "main":
        loader = ShardedLoader(dataset, rank=dist.get_rank(), world=dist.get_world_size())
    return loader
"""


def dispatch(call):
    return one(
        f"""
    loader = {call}
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        "from shards import ShardedLoader\n" + DISPATCH,
    )


C["builder_dispatch_picks_the_sampler_branch"] = (
    R,
    True,
    dispatch('load_data(dataset, kind="toy")'),
    "train.py",
)
C["builder_dispatch_default_picks_the_sampler_branch"] = (R, True, dispatch("load_data(dataset)"), "train.py")
C["NEG_builder_dispatch_picks_another_branch"] = (
    R,
    False,
    dispatch('load_data(dataset, kind="main")'),
    "train.py",
)


# SEDD: the loader built in place as the argument of a generator that re-iterates it forever; its
# ``if sampler is not None: sampler.set_epoch(...)`` never runs when no call hands it the sampler
CYCLE = """
def cycle(loader, sampler=None):
    while True:
        if sampler is not None:
            sampler.set_epoch(random.randint(0, 100000))
        for batch in loader:
            yield batch
"""


def cycled(call):
    return one(
        f"""
    sampler = DistributedSampler(dataset)
    train_iter = {call}
    for step in range(args.steps):
        x, y = next(train_iter)
        out = model(x.cuda())
        loss = criterion(out, y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        "import random\n" + CYCLE,
    )


C["inline_loader_cycled_sampler_never_handed"] = (
    R,
    True,
    cycled("cycle(DataLoader(dataset, batch_size=8, sampler=sampler))"),
    "train.py",
)
C["NEG_inline_loader_cycled_sampler_handed"] = (
    R,
    False,
    cycled("cycle(DataLoader(dataset, batch_size=8, sampler=sampler), sampler)"),
    "train.py",
)
C["NEG_inline_loader_cycled_unsharded_shuffle_off"] = (
    R,
    False,
    cycled("cycle(DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, shuffle=False)))"),
    "train.py",
)


# pix2pixHD's data loader object (DeepFashion_Try_On): a factory builds and returns an instance whose
# method hands back the DataLoader another method kept on ``self`` over a shuffling DistributedSampler
LOADER_CLASS = """
class CustomDatasetDataLoader:
    def initialize(self, dataset, rank):
        self.dataset = dataset
        sampler = DistributedSampler(self.dataset) if rank is not None else None
        self.dataloader = DataLoader(self.dataset, batch_size=8, shuffle=sampler is None, sampler=sampler)

    def load_data(self):
        return self.dataloader
"""
FACTORY = """

def CreateDataLoader(dataset, rank):
    data_loader = CustomDatasetDataLoader()
    data_loader.initialize(dataset, rank)
    return data_loader
"""


def loader_object(build, extra="", loop_extra=""):
    return {
        "train.py": HEAD
        + "from data import CreateDataLoader, CustomDatasetDataLoader\n"
        + SETUP
        + f"""
    data_loader = {build}
    loader = data_loader.load_data()
    for epoch in range(args.epochs):
{loop_extra}        for x, y in loader:
"""
        + STEP,
        "data.py": HEAD + LOADER_CLASS + extra + FACTORY,
    }


C["loader_object_from_a_factory_of_another_file"] = (
    R,
    True,
    loader_object("CreateDataLoader(dataset, local_rank)"),
    "train.py",
)
C["loader_object_built_from_its_class"] = (
    R,
    True,
    {
        **loader_object("CustomDatasetDataLoader()"),
        "train.py": loader_object("CustomDatasetDataLoader()")["train.py"].replace(
            "    loader = data_loader.load_data()\n",
            "    data_loader.initialize(dataset, local_rank)\n    loader = data_loader.load_data()\n",
        ),
    },
    "train.py",
)
C["NEG_loader_object_sets_its_epoch"] = (
    R,
    False,
    loader_object(
        "CreateDataLoader(dataset, local_rank)",
        extra="\n    def set_epoch(self, epoch):\n        self.dataloader.sampler.set_epoch(epoch)\n",
        loop_extra="        data_loader.set_epoch(epoch)\n",
    ),
    "train.py",
)


# one loader per task kept in a list or dict entry, picked by a variable and re-iterated when it runs
# out (round 24: DocRes's ``[{'loader': DataLoader(..., sampler=DistributedSampler(d)), ...} for ...]``)
def per_task(build, pick, reset=""):
    return one(
        build
        + f"""
    its = {{}}
    for step in range(args.max_steps):
        k = step % len(datasets)
        try:
            x, y = next(its[k])
        except (StopIteration, KeyError):
{reset}            its[k] = iter({pick})
            x, y = next(its[k])
"""
        + STEP.replace("            ", "        "),
        "datasets = [torch.load(p) for p in ('a.pt', 'b.pt')]\n",
    )


LIST_BUILD = """
    loaders = [DataLoader(d, batch_size=8, sampler=DistributedSampler(d)) for d in datasets]
"""
C["per_task_list_reiterated"] = (R, True, per_task(LIST_BUILD, "loaders[k]"), "train.py")
C["per_task_dict_entries_reiterated"] = (
    R,
    True,
    per_task(
        """
    tasks = [{"name": i, "loader": DataLoader(d, batch_size=8, sampler=DistributedSampler(d))} for i, d in enumerate(datasets)]
""",
        "tasks[k]['loader']",
    ),
    "train.py",
)
C["per_task_keyed_assignment_reiterated"] = (
    R,
    True,
    per_task(
        """
    loaders = {}
    for k, d in enumerate(datasets):
        loaders[k] = DataLoader(d, batch_size=8, sampler=DistributedSampler(d))
""",
        "loaders[k]",
    ),
    "train.py",
)
C["NEG_per_task_list_reiterated_with_set_epoch"] = (
    R,
    False,
    per_task(LIST_BUILD, "loaders[k]", reset="            loaders[k].sampler.set_epoch(step)\n"),
    "train.py",
)
C["NEG_per_task_list_of_validation_loaders"] = (
    R,
    False,
    per_task(LIST_BUILD.replace("loaders =", "val_loaders ="), "val_loaders[k]"),
    "train.py",
)


def own_sampler(iter_extra="", shuffle_default="True", call="EpochSampler(dataset, rank, world)"):
    # MagFace: a copy of DistributedSampler in the data module (``g.manual_seed(self.epoch)`` in
    # ``__iter__``, ``set_epoch`` its only change of epoch), built by a loader builder there; the
    # entry loops the epochs over the returned loader and never calls ``set_epoch``
    return {
        "train.py": HEAD
        + "from data import train_loader\n"
        + SETUP
        + """
    rank, world = dist.get_rank(), dist.get_world_size()
    loader = train_loader(dataset, rank, world)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        "data.py": f"""
import torch
from torch.utils.data import DataLoader, Sampler


class EpochSampler(Sampler):
    def __init__(self, dataset, rank, world, shuffle={shuffle_default}):
        self.dataset, self.rank, self.world = dataset, rank, world
        self.shuffle = shuffle
        self.epoch = 0

    def __iter__(self):
        g = torch.Generator()
        g.manual_seed(self.epoch)
{iter_extra}        order = torch.randperm(len(self.dataset), generator=g) if self.shuffle else torch.arange(len(self.dataset))
        return iter(order[self.rank :: self.world].tolist())

    def __len__(self):
        return len(self.dataset) // self.world

    def set_epoch(self, epoch):
        self.epoch = epoch


def train_loader(dataset, rank, world):
    sampler = {call}
    return DataLoader(dataset, batch_size=8, sampler=sampler)
""",
    }


C["project_sampler_copy_ordered_by_its_epoch"] = (R, True, own_sampler(), "train.py")
C["project_sampler_copy_shuffle_passed_true"] = (
    R,
    True,
    own_sampler(shuffle_default="False", call="EpochSampler(dataset, rank, world, shuffle=True)"),
    "train.py",
)
# near misses: a sampler that advances its own epoch each pass, one left at a false shuffle default
C["NEG_project_sampler_advancing_its_own_epoch"] = (
    R,
    False,
    own_sampler(iter_extra="        self.epoch += 1\n"),
    "train.py",
)
C["NEG_project_sampler_shuffle_default_false"] = (R, False, own_sampler(shuffle_default="False"), "train.py")

# ``sampler.set_epoch(0)`` once, before the epoch loop (Copyisallyouneed's ``train.py``): the epoch is
# set for good and every pass draws the same order, as with no ``set_epoch``
C["literal_set_once_before_the_epoch_loop"] = (
    R,
    True,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    sampler.set_epoch(0)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
# near misses: the loop also sets its own epoch, or the one call passes a name (a resumed start)
C["NEG_literal_set_before_the_loop_and_the_epoch_inside_it"] = (
    R,
    False,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    sampler.set_epoch(0)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["NEG_epoch_set_from_the_loop_variable_in_a_helper"] = (
    R,
    False,
    one(
        """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        start_epoch(sampler, epoch)
        for x, y in loader:
"""
        + STEP,
        """
def start_epoch(sampler, epoch):
    sampler.set_epoch(epoch)
""",
    ),
    "train.py",
)

# kpgt: ``Trainer.fit`` sets the epoch only ``if self.ddp:``, and ``self.ddp`` is the constructor's
# ``ddp=False`` that the script never passes: the call never runs, the order repeats every epoch
FLAGGED_TRAINER = (
    HEAD
    + """
class Trainer:
    def __init__(self, optimizer, criterion, device, ddp=False, local_rank=0):
        self.optimizer = optimizer
        self.criterion = criterion
        self.device = device
        self.ddp = ddp
        self.local_rank = local_rank

    def train_epoch(self, model, train_loader):
        for x, y in train_loader:
            loss = self.criterion(model(x.to(self.device)), y.to(self.device))
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def fit(self, model, train_loader, epochs):
        for epoch in range(epochs):
            if self.ddp:
                train_loader.sampler.set_epoch(epoch)
            self.train_epoch(model, train_loader)
"""
)


def flagged_trainer(construct, trainer=FLAGGED_TRAINER, extra=""):
    return {
        "trainer.py": trainer,
        "train.py": HEAD
        + "from trainer import Trainer\n"
        + extra
        + SETUP
        + f"""
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    trainer = {construct}
    trainer.fit(model, loader, args.epochs)
""",
    }


C["set_epoch_behind_a_constructor_flag_never_passed"] = (
    R,
    True,
    flagged_trainer("Trainer(optimizer, criterion, 'cuda', local_rank=local_rank)"),
    "train.py",
)
# near misses: the flag is passed (by keyword, by position), set from outside, or a subclass may pass it
C["NEG_constructor_flag_passed_by_keyword"] = (
    R,
    False,
    flagged_trainer("Trainer(optimizer, criterion, 'cuda', ddp=True, local_rank=local_rank)"),
    "train.py",
)
C["NEG_constructor_flag_passed_by_position"] = (
    R,
    False,
    flagged_trainer("Trainer(optimizer, criterion, 'cuda', True, local_rank)"),
    "train.py",
)
C["NEG_constructor_flag_set_on_the_instance"] = (
    R,
    False,
    flagged_trainer("Trainer(optimizer, criterion, 'cuda')\n    trainer.ddp = True"),
    "train.py",
)
C["NEG_constructor_flag_of_a_subclassed_trainer"] = (
    R,
    False,
    flagged_trainer(
        "DDPTrainer(optimizer, criterion, 'cuda')",
        FLAGGED_TRAINER
        + """

class DDPTrainer(Trainer):
    def __init__(self, optimizer, criterion, device):
        super().__init__(optimizer, criterion, device, ddp=True)
""",
    )
    | {
        "train.py": flagged_trainer(
            "DDPTrainer(optimizer, criterion, 'cuda')\n    evaluator = Trainer(optimizer, criterion, 'cpu')"
        )["train.py"].replace("from trainer import Trainer", "from trainer import DDPTrainer, Trainer")
    },
    "train.py",
)
# the trainer class and the script in one file
C["set_epoch_behind_a_constructor_flag_never_passed_one_file"] = (
    R,
    True,
    {
        "train.py": FLAGGED_TRAINER
        + SETUP
        + """
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    Trainer(optimizer, criterion, 'cuda').fit(model, loader, args.epochs)
"""
    },
    "train.py",
)
C["NEG_constructor_flag_passed_one_file"] = (
    R,
    False,
    {
        "train.py": FLAGGED_TRAINER
        + SETUP
        + """
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    Trainer(optimizer, criterion, 'cuda', ddp=True).fit(model, loader, args.epochs)
"""
    },
    "train.py",
)
C["NEG_constructor_flag_rebound_in_another_method"] = (
    R,
    False,
    flagged_trainer(
        "Trainer(optimizer, criterion, 'cuda')",
        FLAGGED_TRAINER
        + """
    def distribute(self):
        self.ddp = True
""",
    ),
    "train.py",
)


# Round 26 (greenlet/mllm): two helpers of one file each build `train_sampler = DistributedSampler(ds)`
# and `dataloader = DataLoader(ds, sampler=train_sampler)`; the generator re-iterates its own loader
# forever, the other helper's loader is only returned. Same local names, two loaders: the returning
# helper's sampler is not drawn by the generator's loop.
TWO_HELPERS = (
    HEAD
    + """

def loader_forever(dataset, batch_size):
    while True:
        train_sampler = DistributedSampler(dataset{shuffle})
        dataloader = DataLoader(dataset, batch_size=batch_size, sampler=train_sampler)
        for batch in dataloader:
            yield batch


def create_dataloader(dataset, batch_size):
    train_sampler = DistributedSampler(dataset)  # the returning helper
    dataloader = DataLoader(dataset, batch_size=batch_size, sampler=train_sampler)
    return dataloader
"""
    + SETUP
    + """
    it = loader_forever(dataset, 8)
    for epoch in range(args.epochs):
        for step in range(100):
            x, y = next(it)
            out = model(x.cuda())
            loss = criterion(out, y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""
)


def _line_of(source, marker):
    return next(i for i, line in enumerate(source.splitlines(), 1) if marker in line)


_UNUSED = TWO_HELPERS.format(shuffle="")
C["generator_helper_own_sampler_beside_a_returning_helper"] = (
    R,
    True,
    {"train.py": _UNUSED},
    f"train.py:{_line_of(_UNUSED, 'DistributedSampler(dataset)')}",
)
C["NEG_returning_helper_sampler_not_the_generators_same_named_one"] = (
    R,
    False,
    {"train.py": _UNUSED},
    f"train.py:{_line_of(_UNUSED, '# the returning helper')}",
)
_QUIET = TWO_HELPERS.format(shuffle=", shuffle=False")
C["NEG_only_the_returning_helper_shuffles_and_nothing_loops_it"] = (
    R,
    False,
    {"train.py": _QUIET},
    "train.py",
)
# near miss: the generator draws the returning helper's loader (bound from its call, not built there)
_CALLED = _QUIET.replace(
    "        train_sampler = DistributedSampler(dataset, shuffle=False)\n"
    "        dataloader = DataLoader(dataset, batch_size=batch_size, sampler=train_sampler)\n",
    "        dataloader = create_dataloader(dataset, batch_size)\n",
)
C["generator_draws_the_returning_helpers_loader"] = (
    R,
    True,
    {"train.py": _CALLED},
    f"train.py:{_line_of(_CALLED, '# the returning helper')}",
)


# Round 26 (lw_pytorch_template): the builder the script calls dispatches on its argument and returns
# the whole result of the builder of its file that makes the training loaders over a shuffling
# DistributedSampler; the script loops the epochs over what it got, and nothing sets the epoch.
DISPATCH = """
def build_dataloader(status, dataset, distributed=False):
    if status == "train":
        return build_train_dataloader(dataset, distributed)
    return DataLoader(dataset, batch_size=8, shuffle=False)


def build_train_dataloader(dataset, distributed=False):
    if distributed:
        train_sampler = DistributedSampler(dataset{shuffle})
        train_loader = DataLoader(dataset, batch_size=8, sampler=train_sampler)
    else:
        train_loader = DataLoader(dataset, batch_size=8, shuffle=True)
    val_loader = DataLoader(dataset, batch_size=8)
    return train_loader, val_loader
"""


def _dispatching_builder(shuffle):
    return {
        "train.py": HEAD
        + "from data import build_dataloader\n"
        + SETUP
        + """
    train_loader, val_loader = build_dataloader("train", dataset, distributed=True)
    for epoch in range(args.epochs):
        for x, y in train_loader:
"""
        + STEP,
        "data.py": HEAD + DISPATCH.format(shuffle=shuffle),
    }


C["builder_other_file_dispatches_to_a_builder_of_its_file"] = (R, True, _dispatching_builder(""), "train.py")
C["NEG_builder_dispatches_to_an_unshuffled_sampler"] = (
    R,
    False,
    _dispatching_builder(", shuffle=False"),
    "train.py",
)


# Round 27 (exp_torch_byol): the builder of another file picked per dataset in an if/elif chain, every
# branch naming one that returns a loader over a shuffling DistributedSampler.
def _builder_per_dataset(plain_builder):
    return {
        "train.py": HEAD
        + "from data import build_loader, build_other_loader\n"
        + SETUP
        + """
    if args.dataset == "a":
        loader_method = build_loader
    elif args.dataset == "b":
        loader_method = build_other_loader
    else:
        loader_method = build_loader
    loader = loader_method(dataset, 8)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        "data.py": HEAD
        + BUILD
        + (
            """
def build_other_loader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, shuffle=True)
"""
            if plain_builder
            else """
def build_other_loader(dataset, batch_size):
    sampler = DistributedSampler(dataset, shuffle=True)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)
"""
        ),
    }


C["builder_picked_per_dataset_in_branches"] = (R, True, _builder_per_dataset(False), "train.py")
# one branch names a builder without a DistributedSampler: not every run draws from one
C["NEG_builder_picked_per_dataset_one_without_sampler"] = (R, False, _builder_per_dataset(True), "train.py")


# Round 27 (3D-Detection-Code): the project's own copy of torch's DistributedSampler, in a module of
# its own, built in another file (``from lib.datasets.loader.sampler import DistributedSampler``).
def _project_sampler(seeded_by_epoch):
    seed = (
        "g.manual_seed(self.epoch)"
        if seeded_by_epoch
        else "g.manual_seed(int(torch.empty((), dtype=torch.int64).random_().item()))"
    )
    return (
        """
import math
import torch
from torch.utils.data.sampler import Sampler


class DistributedSampler(Sampler):
    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True):
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.shuffle = shuffle
        self.num_samples = int(math.ceil(len(self.dataset) * 1.0 / self.num_replicas))

    def __iter__(self):
        g = torch.Generator()
        """
        + seed
        + """
        indices = torch.randperm(len(self.dataset), generator=g).tolist()
        return iter(indices[self.rank :: self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch
"""
    )


PROJECT_SAMPLER_HEAD = HEAD.replace(
    "from torch.utils.data.distributed import DistributedSampler\n",
    "from samplers import DistributedSampler\n",
)


def _project_sampler_builder(seeded_by_epoch, shuffle=""):
    return {
        "samplers.py": _project_sampler(seeded_by_epoch),
        "data.py": PROJECT_SAMPLER_HEAD
        + f"""
def build_dataloader(dataset, batch_size, training):
    if training:
        sampler = DistributedSampler(dataset{shuffle})
    else:
        sampler = None
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)
""",
        "train.py": HEAD
        + "from data import build_dataloader\n"
        + SETUP
        + """
    train_loader = build_dataloader(dataset, 8, training=True)
    for epoch in range(args.epochs):
        for x, y in train_loader:
"""
        + STEP,
    }


C["project_sampler_class_of_another_file_via_builder"] = (
    R,
    True,
    _project_sampler_builder(True),
    "train.py",
)
# its ``__iter__`` draws a fresh seed each pass: the order changes every epoch without set_epoch
C["NEG_project_sampler_class_reseeded_each_pass"] = (R, False, _project_sampler_builder(False), "train.py")
C["NEG_project_sampler_class_unshuffled"] = (
    R,
    False,
    _project_sampler_builder(True, ", shuffle=False"),
    "train.py",
)
C["project_sampler_class_of_another_file_built_here"] = (
    R,
    True,
    {
        "samplers.py": _project_sampler(True),
        "train.py": PROJECT_SAMPLER_HEAD
        + SETUP
        + """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
    },
    "train.py",
)


# X-LAN: the project's sampler copy takes its epoch at construction (``__init__(..., epoch=0):
# self.epoch = epoch``) and the loader is rebuilt every epoch with ``epoch=epoch``: no set_epoch needed
C["NEG_project_sampler_class_given_the_epoch_at_construction"] = (
    R,
    False,
    {
        "samplers.py": _project_sampler(True)
        .replace("shuffle=True):", "shuffle=True, epoch=0):")
        .replace("self.epoch = 0", "self.epoch = epoch"),
        "data.py": PROJECT_SAMPLER_HEAD
        + """
def load_train(dataset, epoch):
    sampler = DistributedSampler(dataset, epoch=epoch)
    return DataLoader(dataset, batch_size=8, sampler=sampler)
""",
        "train.py": HEAD
        + "from data import load_train\n"
        + SETUP
        + """
    for epoch in range(args.epochs):
        train_loader = load_train(dataset, epoch)
        for x, y in train_loader:
"""
        + STEP,
    },
    "train.py",
)


# Round 28 (CHORE): the dataset class builds its own loader (``get_loader(rank, world_size)`` over a
# DistributedSampler of itself); a trainer of another file is handed the dataset and calls that method
# on it, then walks the epochs
def _dataset_builds_its_loader(other_class="", set_epoch=""):
    return {
        "train.py": HEAD
        + "from trainer import Trainer\n"
        + """
def main(args, dataset, net):
    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    model = DDP(net.cuda(), device_ids=[rank])
    Trainer(model, dataset, rank, dist.get_world_size()).train_model(args.epochs)
""",
        "trainer.py": HEAD
        + f"""
class Trainer:
    def __init__(self, model, train_dataset, rank, world_size):
        self.model = model
        self.train_dataset = train_dataset
        self.rank = rank
        self.world_size = world_size
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_model(self, epochs):
        train_loader = self.train_dataset.get_loader(rank=self.rank, world_size=self.world_size)
        for epoch in range(epochs):
{set_epoch}            for x, y in train_loader:
                loss = nn.functional.cross_entropy(self.model(x.cuda()), y.cuda())
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
""",
        "data.py": HEAD
        + """
class BaseDataset(torch.utils.data.Dataset):
    def get_loader(self, shuffle=True, rank=-1, world_size=-1):
        if world_size > 0:
            sampler = DistributedSampler(self, num_replicas=world_size, rank=rank)
            return DataLoader(self, batch_size=8, sampler=sampler)
        return DataLoader(self, batch_size=8, shuffle=shuffle)
"""
        + other_class,
    }


C["loader_built_by_a_method_of_the_handed_dataset"] = (
    R,
    True,
    _dataset_builds_its_loader(),
    "trainer.py",
)
# near misses: another project class has a get_loader that draws no DistributedSampler (which one
# runs is unknown), or the trainer sets the sampler's epoch
C["NEG_loader_method_of_the_same_name_without_a_sampler"] = (
    R,
    False,
    _dataset_builds_its_loader(
        other_class="""

class ListLoader:
    def get_loader(self, rank=-1, world_size=-1):
        return DataLoader(self.items, batch_size=8, shuffle=True)
"""
    ),
    "trainer.py",
)
C["NEG_loader_method_of_the_handed_dataset_epoch_set"] = (
    R,
    False,
    _dataset_builds_its_loader(set_epoch="            train_loader.sampler.set_epoch(epoch)\n"),
    "trainer.py",
)


# Round 28 (MGMatting): the loader over a DistributedSampler is handed to a trainer class of another
# file whose step loop makes its iterator again each time it runs out
def _trainer_restarts_the_iterator(restart="                data_iter = iter(self.train_loader)\n"):
    return {
        "train.py": HEAD
        + "from trainer import Trainer\n"
        + SETUP
        + """
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    trainer = Trainer(model, optimizer, train_loader=loader)
    trainer.train(args.total_steps)
""",
        "trainer.py": HEAD
        + f"""
class Trainer:
    def __init__(self, model, optimizer, train_loader):
        self.model = model
        self.optimizer = optimizer
        self.train_loader = train_loader

    def train(self, total_steps):
        data_iter = iter(self.train_loader)
        for step in range(total_steps):
            try:
                x, y = next(data_iter)
            except StopIteration:
{restart}                x, y = next(data_iter)
            loss = nn.functional.cross_entropy(self.model(x.cuda()), y.cuda())
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
""",
    }


C["trainer_step_loop_restarts_the_iterator"] = (R, True, _trainer_restarts_the_iterator(), "train.py")
# near misses: the step loop stops at the end of the data (one pass), or tells the sampler its pass
C["NEG_trainer_step_loop_never_restarts_the_iterator"] = (
    R,
    False,
    _trainer_restarts_the_iterator(restart="                break\n"),
    "train.py",
)
C["NEG_trainer_step_loop_restarts_after_setting_the_epoch"] = (
    R,
    False,
    _trainer_restarts_the_iterator(
        restart="                self.train_loader.sampler.set_epoch(step)\n"
        "                data_iter = iter(self.train_loader)\n"
    ),
    "train.py",
)
