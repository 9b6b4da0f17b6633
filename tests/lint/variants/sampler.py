from tests.lint.variants.set_epoch import HEAD, SETUP, STEP, TRAIN_EPOCH


def one(body, extra=""):
    return {"train.py": HEAD + extra + SETUP + body}


R = "sampler-missing"
C = {}
C["canon"] = (
    R,
    True,
    one(
        """
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["no_shuffle"] = (
    R,
    True,
    one(
        """
    loader = DataLoader(dataset, batch_size=8, num_workers=4)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["random_sampler"] = (
    R,
    True,
    one(
        """
    loader = DataLoader(dataset, batch_size=8, sampler=torch.utils.data.RandomSampler(dataset))
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["helper_same_file"] = (
    R,
    True,
    one(
        """
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
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
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer, criterion)
""",
        "engine.py": "import torch\n" + TRAIN_EPOCH,
    },
    "train.py",
)
C["builder_same_file"] = (
    R,
    True,
    one(
        """
    loader = make_loader(dataset)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        """
def make_loader(dataset):
    return DataLoader(dataset, batch_size=8, shuffle=True, num_workers=4)
""",
    ),
    "train.py",
)
C["builder_other_file"] = (
    R,
    True,
    {
        "train.py": HEAD
        + "from data import make_loader\n"
        + SETUP
        + """
    loader = make_loader(dataset)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        "data.py": HEAD
        + """
def make_loader(dataset):
    return DataLoader(dataset, batch_size=8, shuffle=True, num_workers=4)
""",
    },
    "train.py",
)
C["trainer_class"] = (
    R,
    True,
    {
        "trainer.py": HEAD
        + """
class Trainer:
    def __init__(self, model, dataset, epochs):
        self.model = model
        self.epochs = epochs
        self.loader = DataLoader(dataset, batch_size=8, shuffle=True)
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def fit(self):
        for epoch in range(self.epochs):
            for x, y in self.loader:
                loss = self.model(x).mean()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
""",
        "train.py": HEAD
        + "from trainer import Trainer\n"
        + SETUP
        + """
    Trainer(model, dataset, args.epochs).fit()
""",
    },
    "trainer.py",
)
C["dict_by_phase"] = (
    R,
    True,
    one(
        """
    dsets = {"train": dataset, "val": dataset}
    dataloaders = {x: DataLoader(dsets[x], batch_size=8, shuffle=True) for x in ["train", "val"]}
    for epoch in range(args.epochs):
        for phase in ["train", "val"]:
            model.train(phase == "train")
            for x, y in dataloaders[phase]:
                out = model(x.cuda())
                loss = criterion(out, y.cuda())
                optimizer.zero_grad()
                if phase == "train":
                    loss.backward()
                    optimizer.step()
"""
    ),
    "train.py",
)
C["dict_entry_assigned"] = (
    R,
    True,
    one(
        """
    loaders = {}
    loaders["train"] = DataLoader(dataset, batch_size=8, shuffle=True)
    for epoch in range(args.epochs):
        for x, y in loaders["train"]:
"""
        + STEP
    ),
    "train.py",
)
C["batch_sampler_random"] = (
    R,
    True,
    one(
        """
    loader = DataLoader(
        dataset, batch_sampler=torch.utils.data.BatchSampler(torch.utils.data.RandomSampler(dataset), 8, False)
    )
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["bucket_batch_sampler_random"] = (
    R,
    True,
    one(
        """
    sampler = torch.utils.data.RandomSampler(dataset)
    buckets = BucketBatchSampler(sampler, 8, False)
    loader = DataLoader(dataset, batch_sampler=buckets)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        extra="from buckets import BucketBatchSampler\n",
    ),
    "train.py",
)
C["NEG_batch_sampler_of_own"] = (
    R,
    False,
    one(
        """
    buckets = RankBucketBatchSampler(dataset, 8, rank=dist.get_rank(), world_size=dist.get_world_size())
    loader = DataLoader(dataset, batch_sampler=buckets)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        extra="from buckets import RankBucketBatchSampler\n",
    ),
    "train.py",
)
C["NEG_dist_sampler"] = (
    R,
    False,
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
C["NEG_chosen"] = (
    R,
    False,
    one(
        """
    sampler = DistributedSampler(dataset) if args.distributed else None
    loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["NEG_eval_only"] = (
    R,
    False,
    one(
        """
    train_loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    val_loader = DataLoader(dataset, batch_size=8, shuffle=False)
    for epoch in range(args.epochs):
        for x, y in train_loader:
"""
        + STEP
        + """        with torch.no_grad():
            for x, y in val_loader:
                model(x)
"""
    ),
    "train.py",
)
C["NEG_rank_shard"] = (
    R,
    False,
    one(
        """
    shard = torch.utils.data.Subset(dataset, range(dist.get_rank(), len(dataset), dist.get_world_size()))
    loader = DataLoader(shard, batch_size=8, shuffle=True)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP
    ),
    "train.py",
)
C["NEG_iterable"] = (
    R,
    False,
    one(
        """
    loader = DataLoader(StreamDataset(dist.get_rank()), batch_size=8)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        """
class StreamDataset(torch.utils.data.IterableDataset):
    def __init__(self, rank):
        self.rank = rank
    def __iter__(self):
        yield from range(self.rank, 100, 8)
""",
    ),
    "train.py",
)
C["NEG_same_name_in_inference"] = (
    R,
    False,
    one(
        """
    sampler = DistributedSampler(dataset)
    train_loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        train_one_epoch(model, train_loader, optimizer, criterion)


def inference(dataset, net):
    train_loader = DataLoader(dataset, batch_size=8, shuffle=False)
    net.eval()
    for x, y in train_loader:
        net(x)
""",
        TRAIN_EPOCH.replace("(model, loader,", "(model, train_loader,").replace(
            "in loader:", "in train_loader:"
        ),
    ),
    "train.py",
)
C["loaders_handed_in_a_list"] = (
    R,
    True,
    one(
        """
    train_loader = DataLoader(dataset, batch_size=8, shuffle=False)
    for epoch in range(args.epochs):
        train_and_evaluate(model, optimizer, criterion, [train_loader, None])


def train_and_evaluate(model, optimizer, criterion, loaders):
    train_loader, eval_loader = loaders
    for x, y in train_loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""
    ),
    "train.py",
)
C["NEG_builder_returns_datasets_here"] = (
    R,
    False,
    {
        "train.py": HEAD
        + "from data import build\n"
        + SETUP
        + """
    train_set, val_set = build(dataset, dset_only=True)
    sampler = DistributedSampler(train_set)
    train_loader = DataLoader(train_set, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in train_loader:
"""
        + STEP,
        "data.py": HEAD
        + """
def build(dataset, dset_only=False):
    train_set, val_set = dataset, dataset
    if dset_only:
        return train_set, val_set
    return DataLoader(train_set, shuffle=True), DataLoader(val_set)
""",
    },
    "train.py",
)


def shuffle_param_builder(call):
    # rDL-SIM: ``get_loader_SR(..., data_root, True, num_workers)`` and a builder returning
    # ``DataLoader(dataset, shuffle=shuffle)`` with no sampler: the caller's literal decides
    return {
        "train.py": HEAD
        + "from data import get_loader\n"
        + SETUP
        + f"""
    loader = {call}
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        "data.py": HEAD
        + """
def get_loader(dataset, batch_size, shuffle=False, num_workers=0):
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, num_workers=num_workers)
""",
    }


C["builder_other_file_shuffle_parameter_true"] = (
    R,
    True,
    shuffle_param_builder("get_loader(dataset, 8, True, 4)"),
    "train.py",
)
C["builder_other_file_shuffle_keyword_true"] = (
    R,
    True,
    shuffle_param_builder("get_loader(dataset, 8, shuffle=True)"),
    "train.py",
)
# the builder's own default (False), or a literal false: an ordered loader, maybe evaluation or sliced
C["NEG_builder_other_file_shuffle_parameter_default"] = (
    R,
    False,
    shuffle_param_builder("get_loader(dataset, 8)"),
    "train.py",
)
C["NEG_builder_other_file_shuffle_parameter_false"] = (
    R,
    False,
    shuffle_param_builder("get_loader(dataset, 8, False, 4)"),
    "train.py",
)


def prepared_by(binding):
    # BDML: ``accelerate = Accelerator(...)``; ``train_loader, ... = accelerate.prepare(train_loader, ...)``:
    # a receiver bound to an Accelerator prepares (shards) the loader whatever it is called
    return one(
        f"""
    accelerate = {binding}
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    loader, model, optimizer = accelerate.prepare(loader, model, optimizer)
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        "from accelerate import Accelerator\nfrom tools import Preparer\n",
    )


C["NEG_prepared_by_a_name_bound_to_an_accelerator"] = (
    R,
    False,
    prepared_by("Accelerator(mixed_precision='fp16')"),
    "train.py",
)
C["prepared_by_a_name_bound_to_something_else"] = (R, True, prepared_by("Preparer()"), "train.py")


# a builder dispatching on a dataset name: the plain loader of the branch no call picks never runs
DISPATCH = """
def load_data(dataset, kind="toy"):
    if kind == "toy":
        loader = DataLoader(dataset, batch_size=8, shuffle=True)
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


C["builder_dispatch_picks_the_plain_branch"] = (R, True, dispatch("load_data(dataset)"), "train.py")
C["NEG_builder_dispatch_picks_the_sharded_branch"] = (
    R,
    False,
    dispatch('load_data(dataset, kind="main")'),
    "train.py",
)


# no DataLoader: nanoGPT-style batches drawn by hand from torch's default generator, which starts
# from the same seed in every process (round 24: RedLLM's pretrain_ddp.py, microgpt)
GET_BATCH = """
def get_batch(data, block, bs):
    ix = torch.randint(len(data) - block, (bs,))
    x = torch.stack([data[i : i + block] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + block] for i in ix])
    return x.cuda(), y.cuda()
"""
DRAWN_LOOP = """
    for step in range(args.max_steps):
        x, y = get_batch(tokens, 256, 8)
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def drawn(extra="", before="", tokens="torch.load(args.data)"):
    return one(f"\n    tokens = {tokens}\n" + before + DRAWN_LOOP, GET_BATCH + extra)


C["drawn_by_hand_get_batch"] = (R, True, drawn(), "train.py")
C["drawn_by_hand_seeded_with_a_constant"] = (
    R,
    True,
    drawn(before="    torch.manual_seed(1337)\n"),
    "train.py",
)
C["NEG_drawn_by_hand_seeded_by_rank"] = (
    R,
    False,
    drawn(
        extra="seed_offset = int(os.environ['RANK'])\n", before="    torch.manual_seed(1337 + seed_offset)\n"
    ),
    "train.py",
)
C["NEG_drawn_by_hand_from_this_ranks_shard"] = (
    R,
    False,
    drawn(tokens="torch.load(args.data).chunk(dist.get_world_size())[dist.get_rank()]"),
    "train.py",
)
C["drawn_by_hand_randperm_inline"] = (
    R,
    True,
    one(
        """
    tokens = torch.load(args.data)
    for epoch in range(args.epochs):
        perm = torch.randperm(tokens.size(0))
        for k in range(0, tokens.size(0), 8):
            idx = perm[k : k + 8]
            x, y = tokens[idx, :-1], tokens[idx, 1:]
            loss = model(x.cuda(), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""
    ),
    "train.py",
)
# a diffusion timestep indexes the noise schedule, not the data: not a batch draw
C["NEG_timestep_draw_beside_a_sampled_loader"] = (
    R,
    False,
    one(
        """
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    alphas = torch.linspace(0.9, 0.1, 1000)
    for epoch in range(args.epochs):
        for x, y in loader:
            t = torch.randint(0, len(alphas) // 2, (x.size(0),))
            noisy = x * alphas[t].view(-1, 1, 1, 1)
            loss = criterion(model(noisy.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""
    ),
    "train.py",
)


def branch_bound_sampler(guard, before="", builder=False):
    # SemCKD (after RepDistiller/CRD): the CIFAR branch builds a plain loader, only the ImageNet
    # branch binds ``train_sampler``, and the epoch loop calls its ``set_epoch`` when distributed:
    # a distributed CIFAR run stops there (unbound name) before its first step
    cifar = (
        "train_loader = get_cifar_loader(dataset)"
        if builder
        else "train_loader = DataLoader(dataset, batch_size=8, shuffle=True)"
    )
    files = {
        "train.py": HEAD
        + "from data import get_imagenet_loader"
        + (", get_cifar_loader" if builder else "")
        + "\n"
        + SETUP
        + before
        + f"""
    if args.dataset == "cifar100":
        {cifar}
    elif args.dataset == "imagenet":
        train_loader, train_sampler = get_imagenet_loader(args)
    else:
        raise NotImplementedError(args.dataset)
    for epoch in range(args.epochs):
        if {guard}:
            train_sampler.set_epoch(epoch)
        for x, y in train_loader:
"""
        + STEP,
        "data.py": HEAD
        + """
def get_imagenet_loader(args):
    dataset = torch.load(args.root)
    sampler = DistributedSampler(dataset)
    return DataLoader(dataset, batch_size=8, sampler=sampler), sampler


def get_cifar_loader(dataset):
    return DataLoader(dataset, batch_size=8, shuffle=True)
""",
    }
    return files


C["NEG_plain_loader_in_branch_that_leaves_set_epoch_sampler_unbound"] = (
    R,
    False,
    branch_bound_sampler("args.distributed"),
    "train.py",
)
C["NEG_builder_loader_in_branch_that_leaves_set_epoch_sampler_unbound"] = (
    R,
    False,
    branch_bound_sampler("args.distributed", builder=True),
    "train.py",
)
# near misses: the set_epoch is skipped on the plain branch (guarded by what the chain tests, or
# by a None test of a sampler bound before the chain): a distributed run trains on the plain loader
C["plain_loader_in_branch_set_epoch_guarded_by_the_chain_test"] = (
    R,
    True,
    branch_bound_sampler('args.distributed and args.dataset == "imagenet"'),
    "train.py",
)
C["plain_loader_in_branch_sampler_none_before_the_chain"] = (
    R,
    True,
    branch_bound_sampler("train_sampler is not None", before="    train_sampler = None\n"),
    "train.py",
)
C["builder_loader_in_branch_sampler_none_before_the_chain"] = (
    R,
    True,
    branch_bound_sampler(
        "args.distributed and train_sampler is not None", before="    train_sampler = None\n", builder=True
    ),
    "train.py",
)


def own_model_beside_ddp(signature="args, dataset", build="model = Net().cuda()", extra=""):
    # sngp-segmentation: ``self_training_process`` builds its model from a class and never wraps it
    # (the DDP wrap left in a string), beside a function of the file that wraps and samples
    return {
        "train.py": HEAD
        + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


def train_epoch(model, loader, criterion, optimizer):
    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def train_ddp(args, dataset):
    dist.init_process_group("nccl")
    model = DDP(Net().cuda(), device_ids=[int(os.environ["LOCAL_RANK"])])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        train_epoch(model, loader, nn.CrossEntropyLoss(), optimizer)

"""
        + f"""
def self_training(args, {signature}):
    {build}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    for epoch in range(args.epochs):
        train_epoch(model, loader, nn.CrossEntropyLoss(), optimizer)
{extra}"""
    }


C["NEG_function_trains_its_own_unwrapped_model_beside_a_ddp_function"] = (
    R,
    False,
    own_model_beside_ddp(),
    "train.py",
)
# near misses: the model comes from the caller (it may be the wrapped one), or the function averages
# the gradients itself (DDP by hand): the plain loader feeds synchronised training
C["function_trains_a_model_handed_in_beside_a_ddp_function"] = (
    R,
    True,
    own_model_beside_ddp(signature="dataset, net", build="model = net"),
    "train.py",
)
C["function_averages_gradients_of_its_own_model_by_hand"] = (
    R,
    True,
    own_model_beside_ddp(
        extra="""        for p in model.parameters():
            dist.all_reduce(p.grad)
"""
    ),
    "train.py",
)


def trainer_with_ddp_flag(test="self.use_ddp is True", plain_train="self.make_loader(dataset, shuffle=True)"):
    """A trainer class that wraps and builds its loaders under one flag (TAP_ASR's ``if
    self.config.is_use_DDP is True:``), with a plain-loader builder for the single-process branch."""
    return {
        "train.py": HEAD
        + f"""

class Trainer:
    def __init__(self, net, dataset, dev_dataset, use_ddp=False):
        self.use_ddp = use_ddp
        if {test}:
            self.model = DDP(net.cuda(), device_ids=[int(os.environ["LOCAL_RANK"])])
            self.train_loader = self.make_ddp_loader(dataset)
            self.dev_loader = self.make_loader(dev_dataset, shuffle=False)
        else:
            self.model = net.cuda()
            self.train_loader = {plain_train}
            self.dev_loader = self.make_loader(dev_dataset, shuffle=False)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.criterion = nn.CrossEntropyLoss()

    def make_ddp_loader(self, dataset):
        self.sampler = DistributedSampler(dataset)
        if {test}:
            return DataLoader(dataset, batch_size=8, sampler=self.sampler)
        else:
            return DataLoader(dataset, batch_size=8, shuffle=True)

    def make_loader(self, dataset, shuffle):
        return DataLoader(dataset, batch_size=8, shuffle=shuffle)

    def fit(self, epochs):
        for epoch in range(epochs):
            if {test}:
                self.sampler.set_epoch(epoch)
            for x, y in self.train_loader:
                loss = self.criterion(self.model(x.cuda()), y.cuda())
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
"""
    }


# the plain loaders are built only where ``use_ddp is True`` is false (also a builder of plain loaders
# that only the single-process branch calls for the training loader): the single-process path
C["NEG_plain_loader_in_the_else_of_a_flag_compared_is_true"] = (
    R,
    False,
    trainer_with_ddp_flag(),
    "train.py",
)
C["NEG_plain_loader_in_the_else_of_a_flag_compared_eq_true"] = (
    R,
    False,
    trainer_with_ddp_flag(test="self.use_ddp == True"),
    "train.py",
)
# near miss: the distributed branch itself trains on the plain builder's loader
C["plain_builder_called_for_training_in_the_distributed_branch"] = (
    R,
    True,
    {
        "train.py": trainer_with_ddp_flag()["train.py"].replace(
            "self.train_loader = self.make_ddp_loader(dataset)",
            "self.train_loader = self.make_loader(dataset, shuffle=True)",
        )
    },
    "train.py",
)


# WavCaps: a data module's ``train_dataloader(is_distributed=False, ...)`` takes its sampler from a
# helper that returns a DistributedSampler only when the flag is on; the script leaves the flag at
# its False default, so the loader draws the whole dataset on every rank
DATA_MODULE = """
class DataModule:
    def __init__(self, dataset):
        self.train_set = dataset

    def _get_sampler(self, dataset, shuffle, is_distributed, num_tasks, global_rank):
        if not is_distributed:
            return None
        return DistributedSampler(dataset, num_replicas=num_tasks, rank=global_rank, shuffle=shuffle)

    def train_dataloader(self, is_distributed=False, num_tasks=0, global_rank=0):
        sampler = self._get_sampler(self.train_set, True, is_distributed, num_tasks, global_rank)
{before}        return DataLoader(self.train_set, batch_size=8, sampler=sampler, shuffle=sampler is None)
"""


def data_module(call, before=""):
    return {
        "train.py": HEAD
        + "from data import DataModule\n"
        + SETUP
        + f"""
    datamodule = DataModule(dataset)
    loader = {call}
    for epoch in range(args.epochs):
        for x, y in loader:
"""
        + STEP,
        "data.py": HEAD + DATA_MODULE.format(before=before),
    }


C["builder_sampler_chosen_by_a_distribution_flag_left_false"] = (
    R,
    True,
    data_module("datamodule.train_dataloader()"),
    "train.py",
)
# near misses: the call turns the flag on (by keyword, by position), or hands its options on
C["NEG_builder_sampler_chosen_by_a_distribution_flag_passed"] = (
    R,
    False,
    data_module("datamodule.train_dataloader(is_distributed=True, num_tasks=world_size, global_rank=rank)"),
    "train.py",
)
C["NEG_builder_sampler_chosen_by_a_distribution_flag_passed_by_position"] = (
    R,
    False,
    data_module("datamodule.train_dataloader(args.distributed)"),
    "train.py",
)
C["NEG_builder_sampler_chosen_by_a_distribution_flag_spread"] = (
    R,
    False,
    data_module("datamodule.train_dataloader(**loader_options)"),
    "train.py",
)
# the builder also reads the rank for itself (it may shard the data by it)
C["NEG_builder_sampler_chosen_by_a_distribution_flag_data_sharded_by_rank"] = (
    R,
    False,
    data_module(
        "datamodule.train_dataloader()",
        "        self.train_set = self.train_set.shard(num_shards=num_tasks, index=global_rank)\n",
    ),
    "train.py",
)
# A loader named for validation with the verb (``dataloader_validate``, Sherpa3D), whose batches the
# training loop only draws for a rank-0 preview: evaluation, like ``val_loader``.
C["NEG_validate_named_preview"] = (
    R,
    False,
    one(
        """
    train_loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    dataloader_validate = DataLoader(dataset, batch_size=1)
    v_it = iter(dataloader_validate)
    for epoch in range(args.epochs):
        for x, y in train_loader:
            if local_rank == 0:
                with torch.no_grad():
                    model(next(v_it)[0].cuda())
"""
        + STEP
    ),
    "train.py",
)
# ... but a training loader over checked data (``validated_loader``) is still a training loader.
C["validated_named_trained"] = (
    R,
    True,
    one(
        """
    validated_loader = DataLoader(dataset, batch_size=8, shuffle=True)
    for epoch in range(args.epochs):
        for x, y in validated_loader:
"""
        + STEP
    ),
    "train.py",
)


def samplers_made_before_the_loader_chain(sampled="dataset"):
    """rgb_matters: the DistributedSamplers are made in an earlier ``if device_count() > 1:`` block, and
    the loaders in a chain whose first branch (``== 1``) is the single-GPU path and whose ``elif`` draws
    through those samplers."""
    return {
        "train.py": HEAD
        + f"""
def main(args, dataset, eval_dataset, net):
    if torch.cuda.device_count() > 1:
        dist.init_process_group("nccl")
        net = DDP(net.cuda(), device_ids=[int(os.environ["LOCAL_RANK"])])
        train_sampler = DistributedSampler({sampled}, shuffle=False)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    if torch.cuda.device_count() == 1:
        loader = DataLoader(dataset, batch_size=8, shuffle=True)
    elif torch.cuda.device_count() > 1:
        loader = DataLoader({sampled}, batch_size=8, sampler=train_sampler)
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = criterion(net(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""
    }


C["NEG_plain_loader_beside_a_branch_drawing_through_an_earlier_distributed_sampler"] = (
    R,
    False,
    samplers_made_before_the_loader_chain(),
    "train.py",
)
# near miss: the other branch samples another dataset, so the plain loader's data is never sharded
C["plain_loader_beside_a_branch_sampling_another_dataset"] = (
    R,
    True,
    samplers_made_before_the_loader_chain(sampled="eval_dataset"),
    "train.py",
)


def trainer_with_a_ddp_parameter(call="train_func(args, loader, rank=0, ddp=False)"):
    """NARF: train.py's ``train_func(..., ddp=False)`` wraps only ``if ddp:``; its DDP twin
    train_ddp.py calls the same function with ``ddp=True`` and a loader over a DistributedSampler."""
    return {
        "train.py": HEAD
        + f"""
def train_func(args, loader, rank, ddp=False):
    net = nn.Linear(8, 2).cuda(rank)
    if ddp:
        net = DDP(net, device_ids=[rank])
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = criterion(net(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


def train(args, dataset):
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    {call}
""",
        "train_ddp.py": HEAD
        + """from train import train_func


def ddp_train(rank, world_size, args, dataset):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    train_func(args, loader, rank, ddp=True)
""",
    }


C["NEG_plain_loader_handed_to_a_trainer_called_with_ddp_false"] = (
    R,
    False,
    trainer_with_a_ddp_parameter(),
    "train.py",
)
C["NEG_plain_loader_handed_to_a_trainer_leaving_ddp_at_its_false_default"] = (
    R,
    False,
    trainer_with_a_ddp_parameter("train_func(args, loader, 0)"),
    "train.py",
)
# near miss: the file's own call turns the wrap on (by a run-time flag): the plain loader feeds DDP
C["plain_loader_handed_to_a_trainer_called_with_ddp_from_the_options"] = (
    R,
    True,
    trainer_with_a_ddp_parameter("train_func(args, loader, args.rank, ddp=args.distributed)"),
    "train.py",
)


def k_step_chunks(sampler="torch.utils.data.RandomSampler(dataset, num_samples=8 * k)", step_body=None):
    """GFNet: each chunk of k steps draws from ``iter(DataLoader(...))`` handed to a function of another
    file, whose step loop takes ``next(dataloader)`` and calls its file's ``train_step``."""
    step_body = step_body or (
        "    loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())\n"
        "    optimizer.zero_grad()\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
    )
    return {
        "train.py": HEAD
        + "from engine import train_k_steps\n"
        + SETUP
        + f"""
    k = 100
    for n in range(0, args.total_steps, k):
        sampler = {sampler}
        chunk = iter(DataLoader(dataset, batch_size=8, sampler=sampler))
        train_k_steps(n, k, chunk, model, optimizer)
""",
        "engine.py": HEAD
        + f"""
def train_step(x, y, model, optimizer):
{step_body}

def train_k_steps(n_0, k, dataloader, model, optimizer):
    for n in tqdm(range(n_0, n_0 + k)):
        x, y = next(dataloader)
        train_step(x, y, model, optimizer)
""",
    }


C["iterator_over_a_local_sampler_handed_to_a_step_loop_of_another_file"] = (
    R,
    True,
    k_step_chunks(),
    "train.py",
)
# near misses: the chunk draws through a DistributedSampler, or the step function only evaluates
C["NEG_iterator_over_a_distributed_sampler_handed_to_a_step_loop"] = (
    R,
    False,
    k_step_chunks(sampler="DistributedSampler(dataset)"),
    "train.py",
)
C["NEG_iterator_over_a_local_sampler_handed_to_an_evaluation_loop"] = (
    R,
    False,
    k_step_chunks(step_body="    with torch.no_grad():\n        model(x.cuda())\n"),
    "train.py",
)
