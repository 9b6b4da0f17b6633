from tests.lint.variants.set_epoch import HEAD


def main(body, pre=""):
    return {
        "train.py": HEAD
        + pre
        + """
def main(args, loader, net):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    criterion = nn.CrossEntropyLoss()
"""
        + body
    }


LOOP = """
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""
F = "find-unused-true"
C = {}
C["fu_literal"] = (
    F,
    True,
    main("    model = DDP(net.cuda(), device_ids=[local_rank], find_unused_parameters=True)" + LOOP),
    "train.py",
)
C["fu_kwargs_dict"] = (
    F,
    True,
    main(
        "    ddp_kwargs = dict(device_ids=[local_rank], find_unused_parameters=True)\n    model = DDP(net.cuda(), **ddp_kwargs)"
        + LOOP
    ),
    "train.py",
)
C["fu_kwargs_literal"] = (
    F,
    True,
    main(
        "    ddp_kwargs = {'device_ids': [local_rank], 'find_unused_parameters': True}\n    model = DDP(net.cuda(), **ddp_kwargs)"
        + LOOP
    ),
    "train.py",
)
C["fu_argparse_default"] = (
    F,
    True,
    main(
        "    model = DDP(net.cuda(), device_ids=[local_rank], find_unused_parameters=args.find_unused)"
        + LOOP,
        """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--find_unused", type=bool, default=True)
""",
    ),
    "train.py",
)
C["fu_helper"] = (
    F,
    True,
    main(
        "    model = wrap(net.cuda(), local_rank)" + LOOP,
        """
def wrap(m, rank):
    return DDP(m, device_ids=[rank], find_unused_parameters=True)
""",
    ),
    "train.py",
)
C["fu_other_file"] = (
    F,
    True,
    {
        "train.py": HEAD
        + "from dist_utils import wrap\n"
        + """
def main(args, loader, net):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    criterion = nn.CrossEntropyLoss()
    model = wrap(net.cuda(), local_rank)"""
        + LOOP,
        "dist_utils.py": HEAD
        + """
def wrap(m, rank):
    return DDP(m, device_ids=[rank], find_unused_parameters=True)
""",
    },
    "dist_utils.py",
)
C["fu_partial"] = (
    F,
    True,
    main(
        "    wrapper = functools.partial(DDP, device_ids=[local_rank], find_unused_parameters=True)\n    model = wrapper(net.cuda())"
        + LOOP,
        "import functools\n",
    ),
    "train.py",
)
C["fu_partial_imported"] = (
    F,
    True,
    main(
        "    wrap = partial(DDP, find_unused_parameters=True)\n    model = wrap(net.cuda(), device_ids=[local_rank])"
        + LOOP,
        "from functools import partial\n",
    ),
    "train.py",
)
C["fu_NEG_partial_false"] = (
    F,
    False,
    main(
        "    wrap = partial(DDP, find_unused_parameters=False)\n    model = wrap(net.cuda(), device_ids=[local_rank])"
        + LOOP,
        "from functools import partial\n",
    ),
    "train.py",
)
C["fu_dict_of_ddp_kwargs"] = (
    F,
    True,
    main(
        "    model = net.cuda()\n"
        "    trainer = FrameworkTrainer(model, torch_kwargs={'ddp_kwargs': {'find_unused_parameters': True}})"
        + LOOP,
        "from framework import FrameworkTrainer\n",
    ),
    "train.py",
)
C["fu_dict_call_of_ddp_kwargs"] = (
    F,
    True,
    main(
        "    ddp_kwargs = dict(find_unused_parameters=True, broadcast_buffers=False)\n"
        "    model = DDP(net.cuda(), device_ids=[local_rank], **ddp_kwargs)" + LOOP
    ),
    "train.py",
)
C["fu_NEG_dict_false"] = (
    F,
    False,
    main(
        "    model = net.cuda()\n"
        "    trainer = FrameworkTrainer(model, torch_kwargs={'ddp_kwargs': {'find_unused_parameters': False}})"
        + LOOP,
        "from framework import FrameworkTrainer\n",
    ),
    "train.py",
)
C["fu_NEG_false"] = (
    F,
    False,
    main("    model = DDP(net.cuda(), device_ids=[local_rank], find_unused_parameters=False)" + LOOP),
    "train.py",
)
P = "fp16-no-scaler"
C["fp16_autocast"] = (
    P,
    True,
    main("""    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for epoch in range(args.epochs):
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""),
    "train.py",
)
C["fp16_cuda_amp"] = (
    P,
    True,
    main("""    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for epoch in range(args.epochs):
        for x, y in loader:
            with torch.cuda.amp.autocast():
                loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""),
    "train.py",
)
C["fp16_half"] = (
    P,
    True,
    main("""    model = DDP(net.cuda().half(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = criterion(model(x.half()), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""),
    "train.py",
)
C["fp16_dtype_var"] = (
    P,
    True,
    main("""    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    dtype = torch.float16
    for epoch in range(args.epochs):
        for x, y in loader:
            with torch.autocast(device_type="cuda", dtype=dtype):
                loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""),
    "train.py",
)
C["fp16_dtype_getattr"] = (
    P,
    True,
    main("""    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    dtype = getattr(torch, "float16")
    ctx = torch.autocast(device_type="cuda", dtype=dtype)
    for epoch in range(args.epochs):
        for x, y in loader:
            with ctx:
                loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""),
    "train.py",
)
C["fp16_NEG_bf16"] = (
    P,
    False,
    main("""    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for epoch in range(args.epochs):
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""),
    "train.py",
)
C["fp16_NEG_scaler"] = (
    P,
    False,
    main("""    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.cuda.amp.GradScaler()
    for epoch in range(args.epochs):
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = criterion(model(x), y)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
"""),
    "train.py",
)
K = "compile-before-ddp"
C["compile_before"] = (
    K,
    True,
    main("    model = torch.compile(net.cuda())\n    model = DDP(model, device_ids=[local_rank])" + LOOP),
    "train.py",
)
C["compile_before_flag"] = (
    K,
    True,
    main(
        "    model = net.cuda()\n    if args.compile:\n        model = torch.compile(model)\n    model = DDP(model, device_ids=[local_rank])"
        + LOOP
    ),
    "train.py",
)
C["compile_NEG_after"] = (
    K,
    False,
    main("    model = DDP(net.cuda(), device_ids=[local_rank])\n    model = torch.compile(model)" + LOOP),
    "train.py",
)
U = "clip-before-unscale"
C["clip_before_unscale"] = (
    U,
    True,
    main("""    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.cuda.amp.GradScaler()
    for epoch in range(args.epochs):
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = criterion(model(x), y)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
"""),
    "train.py",
)
C["clip_NEG_unscaled"] = (
    U,
    False,
    main("""    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.cuda.amp.GradScaler()
    for epoch in range(args.epochs):
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = criterion(model(x), y)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
"""),
    "train.py",
)
S = "scheduler-per-microstep"
C["sched_micro"] = (
    S,
    True,
    main("""    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / args.accum_steps
            loss.backward()
            if (step + 1) % args.accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
            scheduler.step()
"""),
    "train.py",
)
# A schedule sized in the batches of an epoch, with no part for the accumulation count, is counted
# in micro-batches: stepping it per micro-step runs it over the training it was sized for
# (dialog_model ``len(train_dl) * n_epochs``, the Kaggle ``epochs * (total // batch_size)`` helpers).
SCHED_LOOP = """    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / args.accum_steps
            loss.backward()
            if (step + 1) % args.accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
            scheduler.step()
"""
C["sched_NEG_sized_in_batches"] = (
    S,
    False,
    main(
        """    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    total_steps = len(loader) * args.epochs
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-3, total_steps=total_steps)
"""
        + SCHED_LOOP
    ),
    "train.py",
)
C["sched_sized_in_updates"] = (
    S,
    True,
    main(
        """    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    total_steps = len(loader) // args.accum_steps * args.epochs
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-3, total_steps=total_steps)
"""
        + SCHED_LOOP
    ),
    "train.py",
)
C["sched_NEG_helper_sized_in_batches"] = (
    S,
    False,
    main(
        """    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scheduler = get_scheduler(args, optimizer, len(loader.dataset))
"""
        + SCHED_LOOP,
        """
def get_scheduler(cfg, optimizer, total):
    steps = cfg.epochs * (total // cfg.batch_size)
    return torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-3, total_steps=steps)
""",
    ),
    "train.py",
)
C["sched_helper_sized_in_updates"] = (
    S,
    True,
    main(
        """    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scheduler = get_scheduler(args, optimizer, len(loader.dataset))
"""
        + SCHED_LOOP,
        """
def get_scheduler(cfg, optimizer, total):
    steps = cfg.epochs * (total // cfg.batch_size) // cfg.accum_steps
    return torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-3, total_steps=steps)
""",
    ),
    "train.py",
)
Z = "zero-grad-inside-accum"
C["zero_inside"] = (
    Z,
    True,
    main("""    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = criterion(model(x), y) / args.accum_steps
            loss.backward()
            if (step + 1) % args.accum_steps == 0:
                optimizer.step()
"""),
    "train.py",
)
C["compile_before_local_flag"] = (
    K,
    True,
    main(
        "    model = net.cuda()\n"
        "    use_compile = args.compile and torch.cuda.is_available()\n"
        "    if use_compile:\n"
        "        model = torch.compile(model)\n"
        "    if args.ddp:\n"
        "        model = DDP(model, device_ids=[local_rank])" + LOOP
    ),
    "train.py",
)
C["compile_before_device_conjunct"] = (
    K,
    True,
    main(
        "    model = net.cuda()\n"
        '    use_compile = args.compile and args.device.type == "cuda"\n'
        "    if use_compile:\n"
        "        model = torch.compile(model)\n"
        "    model = DDP(model, device_ids=[local_rank])" + LOOP
    ),
    "train.py",
)
C["fu_NEG_paired_options_set_defaults"] = (
    F,
    False,
    main(
        "    model = DDP(net.cuda(), device_ids=[local_rank], find_unused_parameters=args.find_unused_params)"
        + LOOP,
        """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--find_unused_params", action="store_true")
parser.add_argument("--no_find_unused_params", action="store_false", dest="find_unused_params")
parser.set_defaults(find_unused_params=False)
""",
    ),
    "train.py",
)
C["fu_paired_options_default_true"] = (
    F,
    True,
    main(
        "    model = DDP(net.cuda(), device_ids=[local_rank], find_unused_parameters=args.find_unused_params)"
        + LOOP,
        """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--find_unused_params", action="store_true")
parser.add_argument("--no_find_unused_params", action="store_false", dest="find_unused_params")
parser.set_defaults(find_unused_params=True)
""",
    ),
    "train.py",
)
# hostile: aliases in a cycle (``a = b``, ``b = a``) must end, with no internal error
C["NEG_alias_cycle"] = (
    F,
    False,
    {
        "train.py": """
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args, net, loader):
    a = b
    b = a
    c = a if args.distributed else b
    dist.init_process_group("nccl")
    model = DDP(net)
    for x in c(loader):
        model(x).sum().backward()
"""
    },
    "train.py",
)

# Round 22: an option a shipped shell launch script turns on (ImbalancedSSL's run_*.sh passing a
# store_true ``--find_unused_parameters``); the parser's default alone is off.
FU_STORE_TRUE = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--find_unused_parameters", action="store_true")
"""
FU_BY_OPTION = (
    "    model = DDP(net.cuda(), device_ids=[local_rank], find_unused_parameters=args.find_unused_parameters)"
)


def launched(script):
    return {
        **main(FU_BY_OPTION + LOOP, FU_STORE_TRUE),
        "scripts/run.sh": script,
    }


C["fu_launch_script_switch"] = (
    F,
    True,
    launched(
        "#!/bin/bash\ntorchrun --nproc_per_node=4 train.py \\\n    --lr 0.1 \\\n    --find_unused_parameters\n"
    ),
    "train.py",
)
C["fu_launch_script_dashes_value"] = (
    F,
    True,
    launched(
        "python -m torch.distributed.launch --nproc_per_node 8 train.py --find-unused-parameters=1 --epochs 90\n"
    ),
    "train.py",
)
C["fu_NEG_launch_script_without_it"] = (
    F,
    False,
    launched(
        "torchrun --nproc_per_node=4 train.py --lr 0.1\n# --find_unused_parameters (only for the ablation)\n"
    ),
    "train.py",
)
C["fu_NEG_launch_script_shell_variable"] = (
    F,
    False,
    launched('FU=""\ntorchrun --nproc_per_node=4 train.py --find_unused_parameters $FU\n'),
    "train.py",
)
C["fu_NEG_launch_script_off"] = (
    F,
    False,
    launched("torchrun --nproc_per_node=4 train.py --find_unused_parameters False\n"),
    "train.py",
)

# Round 23 (fixer 5): a checkpoint-scoring function that re-wraps each restored model with
# find_unused_parameters=True, puts it in eval() and only runs it under torch.no_grad() — handed to a
# helper, read through ``isinstance``/``model.module.generate`` (Amdg's trainer.predictions): no graph is
# recorded, so DDP never searches one. The same helper call outside no_grad may record one.
SCORING = """
def run_batch(batch, model):
    return model(batch["x"])


def train(args, loader, net):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DDP(net.cuda(), device_ids=[local_rank])
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def score_checkpoints(args, test_loader, net, paths):
    local_rank = int(os.environ["LOCAL_RANK"])
    for path in paths:
        net.load_state_dict(torch.load(path))
        model = DDP(net.cuda(), device_ids=[local_rank], find_unused_parameters=True)
        outs = []
        for batch in test_loader:
            model.eval()
{SCORE}
"""
C["NEG_fu_scoring_under_no_grad"] = (
    F,
    False,
    {
        "train.py": HEAD
        + SCORING.replace(
            "{SCORE}",
            "            with torch.no_grad():\n"
            "                gen = model.module.generate if isinstance(model, DDP) else model.generate\n"
            "                outs.append(run_batch(batch, model))\n"
            "                outs.append(gen(batch['x']))",
        )
    },
    "train.py",
)
C["fu_scoring_helper_with_grad"] = (
    F,
    True,
    {
        "train.py": HEAD
        + SCORING.replace(
            "{SCORE}",
            "            outs.append(run_batch(batch, model))\n"
            "            with torch.no_grad():\n"
            "                outs.append(model(batch['x']))",
        )
    },
    "train.py",
)

# Round 23: a wrap whose forwards record no graph for a backward. A distillation teacher wrapped with
# the keyword, put in eval() and forwarded (and EMA-updated) only under no_grad (MissM-Benchmark); the
# final test wrap after the training loop handed to a same-file evaluate() (m3m); a test worker
# handing its wrap to a validation helper that puts it in eval() (PointHMR's run_validate).
TEACHER = """    model = DDP(net.cuda(), device_ids=[local_rank])
    teacher = build_teacher(args).cuda()
    teacher.eval()
    teacher = DDP(teacher, device_ids=[local_rank], find_unused_parameters=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for epoch in range(args.epochs):
        for x, y in loader:
            {forward}
            loss = criterion(model(x), y) + (model(x) - soft).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                for pt, ps in zip(teacher.parameters(), model.parameters()):
                    pt.data.mul_(0.999).add_(ps.data, alpha=0.001)
"""
C["fu_teacher_forward_with_grad"] = (
    F,
    True,
    main(TEACHER.format(forward="soft = teacher(x)")),
    "train.py",
)
C["fu_NEG_teacher_forward_under_no_grad"] = (
    F,
    False,
    main(TEACHER.format(forward="with torch.no_grad():\n                soft = teacher(x)")),
    "train.py",
)
EVALUATE = """
def evaluate(model, loader):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += model(x).sum().item()
    return total


def train_more(model, loader, optimizer):
    model.train()
    for x, y in loader:
        model(x).sum().backward()
        optimizer.step()
"""
FINAL_TEST = """    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    best = torch.load(args.best)
    model = DDP(best.cuda(), device_ids=[local_rank], find_unused_parameters=True)
    score = {helper}(model, loader{more})
"""
C["fu_final_wrap_handed_to_a_trainer"] = (
    F,
    True,
    main(FINAL_TEST.format(helper="train_more", more=", optimizer"), EVALUATE),
    "train.py",
)
C["fu_NEG_final_wrap_handed_to_evaluate"] = (
    F,
    False,
    main(FINAL_TEST.format(helper="evaluate", more=""), EVALUATE),
    "train.py",
)
TEST_WORKER = """
def run_validate(args, loader, network):
    network.{mode}()
    total = 0.0
    for x, y in loader:
        total += network(x).sum().item()
    return total


def run_test(args, loader, network):
    if args.distributed:
        network = DDP(
            network, device_ids=[args.local_rank],
            find_unused_parameters=True,
        )
    network.eval()
    return run_validate(args, loader, network)


def main(args, loader, net):
    dist.init_process_group("nccl")
    model = DDP(net.cuda(), device_ids=[args.local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for x, y in loader:
        model(x).sum().backward()
        optimizer.step()
    run_test(args, loader, net)
"""
C["fu_test_worker_helper_trains"] = (
    F,
    True,
    {"train.py": HEAD + TEST_WORKER.format(mode="train")},
    "train.py",
)
C["fu_NEG_test_worker_helper_evaluates"] = (
    F,
    False,
    {"train.py": HEAD + TEST_WORKER.format(mode="eval")},
    "train.py",
)

# Round 23: the FSDP1 wrap reaches the clipped attribute through a local name and a move
# (sparklerz's ``fsdp_model = FSDP(model, ...)``; ``self.model = fsdp_model.to(self.device)``).
FS = "fsdp-clip-wrong"
FSDP_TRAINER = """
import torch
from torch.nn.utils import clip_grad_norm_
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


class Trainer:
    def __init__(self, model, device):
        self.device = device
        wrapped = FSDP(model, device_id=device)
        self.model = {held}.to(self.device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-5)

    def train(self, loader):
        for batch in loader:
            self.model(**batch).loss.backward()
            clip_grad_norm_(self.model.parameters(), max_norm=1.0)
            self.optimizer.step()
            self.optimizer.zero_grad()
"""
C["fsdp_wrap_through_a_local_name"] = (
    FS,
    True,
    {"train.py": FSDP_TRAINER.format(held="wrapped")},
    "train.py",
)
C["fsdp_NEG_unwrapped_model_kept"] = (FS, False, {"train.py": FSDP_TRAINER.format(held="model")}, "train.py")

# Round 23: a dtype named by an option's string, ``getattr(torch, cfg.use_dtype)``, held on the trainer
# and used by its training autocast (LightLM's DDP entry sets ``use_dtype = "float16"``): config-gated.
DTYPE_BY_NAME = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, config, model):
        self.config = config
        self.model = DDP(model.cuda())
        self.dtype = getattr(torch, {dtype})

    def train(self, loader, optimizer):
        for x, y in loader:
            with torch.autocast(device_type="cuda", dtype=self.dtype):
                loss = self.model(x, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
"""
C["fp16_dtype_named_by_an_option"] = (
    P,
    True,
    {"trainer.py": DTYPE_BY_NAME.format(dtype="self.config.use_dtype")},
    "trainer.py",
)
C["fp16_NEG_dtype_named_by_a_literal"] = (
    P,
    False,
    {"trainer.py": DTYPE_BY_NAME.format(dtype='"bfloat16"')},
    "trainer.py",
)

# Round 23: the DDP keywords unpacked from a configuration block a function is handed
# (SaProt's ``load_strategy(config): return DDPStrategy(**config)``), where a shipped YAML
# configuration sets ``find_unused_parameters: True``: config-gated. The NEG's configs set it False.
STRATEGY_LOADER = """
import copy
import yaml
import pytorch_lightning as pl
from pytorch_lightning.strategies import DDPStrategy


def load_strategy(config):
    config = copy.deepcopy(config)
    return DDPStrategy(**config)


def main(path, model, data):
    cfg = yaml.safe_load(open(path))
    trainer = pl.Trainer(devices=4, strategy=load_strategy(cfg["strategy"]))
    trainer.fit(model, data)
"""


def strategy_configs(setting):
    return {
        "train.py": STRATEGY_LOADER,
        "config/task_a.yaml": f"strategy:\n  find_unused_parameters: {setting}\n  timeout: 1800\n",
        "config/task_b.yaml": "strategy:\n  find_unused_parameters: False\n",
    }


C["fu_unpacked_configuration_block"] = (F, True, strategy_configs("True"), "train.py")
C["fu_NEG_unpacked_configuration_block_off"] = (F, False, strategy_configs("False"), "train.py")

# Round 23: the test worker's wrap has a DataParallel twin in the ``else`` branch (PAConv's
# ``test(gpu, ...)``): that rebinding never follows the wrap, the uses after both are the wrap's.
BRANCH_TEST = """
def test(args, gpu, loader, net):
    if args.distributed:
        model = DDP(net.cuda(), device_ids=[gpu], find_unused_parameters=True)
    else:
        model = torch.nn.DataParallel(net.cuda())
    model.load_state_dict(torch.load(args.ckpt))
    model.eval()
    for x, y in loader:
        with torch.no_grad():
            logits = model(x)
        {after}
"""
C["fu_branch_twin_then_trained"] = (
    F,
    True,
    {"train.py": HEAD + BRANCH_TEST.format(after="logits.sum().backward()")},
    "train.py",
)
C["fu_NEG_branch_twin_test_worker"] = (
    F,
    False,
    {"train.py": HEAD + BRANCH_TEST.format(after="print(logits.argmax(1))")},
    "train.py",
)


# Round 24: a float16 model whose optimizer scales the loss itself (TaBERT: ``model.half()`` in the
# entry file, fairseq's ``FP16Optimizer`` built by the trainer module it imports).
FP16_TRAINER = """
import torch


class Trainer:
    def __init__(self, model, params):
        self.model = model
        self.optimizer = {build}

    def step(self, x, y):
        loss = self.model(x, y)
        {backward}
        self.optimizer.step()
        self.optimizer.zero_grad()
"""
FP16_ENTRY = (
    HEAD
    + """
from trainer import Trainer


def main(args, loader, net):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    if args.fp16:
        net = net.half()
    model = DDP({net}, device_ids=[local_rank])
    trainer = Trainer(model, list(model.parameters()))
    for epoch in range(args.epochs):
        for x, y in loader:
            trainer.step(x, y)
"""
)
C["fp16_half_trainer_plain_optimizer"] = (
    "fp16-no-scaler",
    True,
    {
        "train.py": FP16_ENTRY.replace("{net}", "net.cuda()"),
        "trainer.py": FP16_TRAINER.format(build="torch.optim.Adam(params)", backward="loss.backward()"),
    },
    "train.py",
)
C["fp16_NEG_half_trainer_scaling_optimizer"] = (
    "fp16-no-scaler",
    False,
    {
        "train.py": FP16_ENTRY.replace("{net}", "net.cuda()"),
        "trainer.py": FP16_TRAINER.format(
            build="optim.FP16Optimizer.build_optimizer(args, params)",
            backward="self.optimizer.backward(loss)",
        ),
    },
    "train.py",
)
C["fp16_NEG_half_wrapped_trainer_scaling_optimizer"] = (
    "fp16-no-scaler",
    False,
    {
        "train.py": FP16_ENTRY.replace("{net}", "net"),
        "trainer.py": FP16_TRAINER.format(
            build="optim.FP16Optimizer.build_optimizer(args, params)",
            backward="self.optimizer.backward(loss)",
        ),
    },
    "train.py",
)

# Round 24: the wrap through a helper that returns DDP of the model it is handed (nanoVLM
# ``model = wrap_model(model)`` after ``model = torch.compile(model)``).
WRAP_HELPER = """
def wrap_model(model):
    local_rank = int(os.environ["LOCAL_RANK"])
    {built}return DDP({wrapped}, device_ids=[local_rank])

"""
C["compile_before_wrap_helper"] = (
    "compile-before-ddp",
    True,
    main(
        "    model = torch.compile(net.cuda())\n    model = wrap_model(model)" + LOOP,
        pre=WRAP_HELPER.format(built="", wrapped="model"),
    ),
    "train.py",
)
C["compile_NEG_wrap_helper_builds_its_own"] = (
    "compile-before-ddp",
    False,
    main(
        "    model = torch.compile(net.cuda())\n    model = wrap_model(model)" + LOOP,
        pre=WRAP_HELPER.format(built="fresh = Net().cuda()\n    ", wrapped="fresh"),
    ),
    "train.py",
)

# Round 24: an option declared ``type=bool`` (RT-ODLab's ``add_argument('--find_unused_parameters',
# default=False, type=bool)``): argparse hands ``bool`` the string, so any value a shipped launch
# script gives, ``False`` or a shell variable holding it, is True. The NEG's script does not pass it.
FU_TYPE_BOOL = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--find_unused_parameters", default=False, type=bool)
"""


def launched_bool(script):
    return {**main(FU_BY_OPTION + LOOP, FU_TYPE_BOOL), "scripts/run.sh": script}


C["fu_launch_script_type_bool_false"] = (
    F,
    True,
    launched_bool("torchrun --nproc_per_node=4 train.py --find_unused_parameters False --lr 0.1\n"),
    "train.py",
)
C["fu_launch_script_type_bool_variable"] = (
    F,
    True,
    launched_bool(
        "FU=False\ntorchrun --nproc_per_node=4 train.py \\\n    --find_unused_parameters ${FU} \\\n    --lr 0.1\n"
    ),
    "train.py",
)
C["fu_NEG_launch_script_type_bool_not_given"] = (
    F,
    False,
    launched_bool("torchrun --nproc_per_node=4 train.py --lr 0.1\n"),
    "train.py",
)


# Round 24 (iVideoGPT's tokenizer trainer): accelerate's ``with accelerator.accumulate(model):`` enters
# ``model.no_sync()`` on the micro-steps that do not sync, like ``accelerator.no_sync(model)`` and
# Fabric's ``fabric.no_backward_sync(model)``; a forward of ``model`` before the block was decided by
# DDP with the sync on, so the backward inside it all-reduces on every micro-step. The forward inside
# the block (accelerate's own examples) is the idiom.
N = "no-sync-after-forward"
ACC_TOGGLE = """
from accelerate import Accelerator


def train(args, loader, model, optimizer, criterion):
    accelerator = Accelerator(gradient_accumulation_steps=args.accum_steps)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for x, y in loader:
        {BEFORE}
        with {TOGGLE}:
            {INSIDE}
            loss = criterion(out, y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
"""


def acc_toggle(toggle: str, forward_inside: bool) -> dict[str, str]:
    forward = "out = model(x)"
    before, inside = ("pass", forward) if forward_inside else (forward, "pass")
    src = ACC_TOGGLE.replace("{BEFORE}", before).replace("{INSIDE}", inside).replace("{TOGGLE}", toggle)
    return {"train.py": src}


C["nsf_forward_before_accumulate"] = (N, True, acc_toggle("accelerator.accumulate(model)", False), "train.py")
C["nsf_forward_before_accelerator_no_sync"] = (
    N,
    True,
    acc_toggle("accelerator.no_sync(model)", False),
    "train.py",
)
C["nsf_forward_before_fabric_no_backward_sync"] = (
    N,
    True,
    {
        "train.py": acc_toggle("fabric.no_backward_sync(model)", False)["train.py"].replace(
            "accelerator", "fabric"
        )
    },
    "train.py",
)
C["nsf_NEG_forward_inside_accumulate"] = (
    N,
    False,
    acc_toggle("accelerator.accumulate(model)", True),
    "train.py",
)
C["nsf_NEG_other_model_before_accumulate"] = (
    N,
    False,
    {
        "train.py": acc_toggle("accelerator.accumulate(model)", True)["train.py"].replace(
            "        pass\n", "        teacher_out = teacher(x)\n", 1
        )
    },
    "train.py",
)
# A clip written by hand in the same file (MedSora's copy of torch's clip_grad_norm_; the captioning
# tutorials' clip_gradient clamping p.grad): run after a scaled backward, it clips scaled gradients.
HAND_CLIP = """
def clip_gradient(optimizer, grad_clip):
    for group in optimizer.param_groups:
        for param in group["params"]:
            if param.grad is not None:
                param.grad.data.clamp_(-grad_clip, grad_clip)
"""


def hand_clip(unscale):
    return main(
        f"""    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.cuda.amp.GradScaler()
    for epoch in range(args.epochs):
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = criterion(model(x), y)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
{"            scaler.unscale_(optimizer)" if unscale else ""}
            clip_gradient(optimizer, args.grad_clip)
            scaler.step(optimizer)
            scaler.update()
""",
        HAND_CLIP,
    )


C["clip_hand_written_helper"] = (U, True, hand_clip(False), "train.py")
C["clip_NEG_hand_written_helper_unscaled"] = (U, False, hand_clip(True), "train.py")
C["clip_NEG_clip_named_helper_unscales_itself"] = (
    U,
    False,
    {
        "train.py": hand_clip(False)["train.py"].replace(
            "    for group in optimizer.param_groups:",
            "    scaler.unscale_(optimizer)\n    for group in optimizer.param_groups:",
        )
    },
    "train.py",
)
# A project helper that hands its **kwargs to DDP (semseg_benchmark's convert_model): the caller's
# find_unused_parameters=True reaches the wrap, in the same file or from another one.
KW_WRAP = """
def convert_model(m, **kwargs):
    if dist.is_initialized():
        m = DDP(m.cuda(), device_ids=[dist.get_rank()], **kwargs)
    return m
"""


def kw_wrap(value, own=True):
    call = f"    model = convert_model(net, find_unused_parameters={value})"
    if own:
        return main(call + LOOP, KW_WRAP)
    return {
        "train.py": HEAD
        + "from dist_utils import convert_model\n"
        + """
def main(args, loader, net):
    dist.init_process_group("nccl")
    criterion = nn.CrossEntropyLoss()
"""
        + call
        + LOOP,
        "dist_utils.py": HEAD + KW_WRAP,
    }


C["fu_kwargs_helper"] = (F, True, kw_wrap("True"), "train.py")
C["fu_kwargs_helper_other_file"] = (F, True, kw_wrap("True", own=False), "train.py")
C["fu_NEG_kwargs_helper_false"] = (F, False, kw_wrap("False", own=False), "train.py")
C["fu_NEG_kwargs_helper_not_to_ddp"] = (
    F,
    False,
    {
        "train.py": kw_wrap("True", own=False)["train.py"],
        "dist_utils.py": HEAD + KW_WRAP.replace(", **kwargs)", ")"),
    },
    "train.py",
)


# An autocast float16 by itself (torch.cuda.amp.autocast(): no dtype) beside a GradScaler switched
# by a dtype option (baby-llama2's GradScaler(enabled=(dtype == 'float16'))): another value of that
# option trains float16 unscaled. Under a test of that option, or built elsewhere, it is not judged.
def dtype_switched(ctx, scaler="torch.cuda.amp.GradScaler(enabled=(args.dtype == 'float16'))"):
    return main(f"""    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ptdtype = {{"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}}[args.dtype]
    ctx = {ctx}
    scaler = {scaler}
    for epoch in range(args.epochs):
        for x, y in loader:
            with ctx:
                loss = criterion(model(x), y)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
""")


C["fp16_default_autocast_dtype_switched_scaler"] = (
    P,
    True,
    dtype_switched('nullcontext() if args.device == "cpu" else torch.cuda.amp.autocast()'),
    "train.py",
)
C["fp16_NEG_dtype_autocast_dtype_switched_scaler"] = (
    P,
    False,
    dtype_switched('nullcontext() if args.device == "cpu" else torch.autocast("cuda", dtype=ptdtype)'),
    "train.py",
)
C["fp16_NEG_default_autocast_under_option"] = (
    P,
    False,
    dtype_switched('torch.cuda.amp.autocast() if args.dtype != "float32" else nullcontext()'),
    "train.py",
)

# Round 26: the keyword given a comparison of an option with a constant, True under the option's
# default (Sherpa3D's ``find_unused_parameters=(FLAGS.mode == 'geometry_modeling')`` with ``--mode``
# defaulting to that stage); the NEG's default is the other stage.
STAGE_PARSER = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--mode", default="{default}", choices=["geometry", "appearance"])
"""
STAGE_WRAP = (
    "    model = DDP(net.cuda(), device_ids=[local_rank], find_unused_parameters=(args.mode == 'geometry'))"
    + LOOP
)
C["fu_option_compared_true_by_default"] = (
    F,
    True,
    main(STAGE_WRAP, STAGE_PARSER.replace("{default}", "geometry")),
    "train.py",
)
C["fu_NEG_option_compared_false_by_default"] = (
    F,
    False,
    main(STAGE_WRAP, STAGE_PARSER.replace("{default}", "appearance")),
    "train.py",
)

# Round 26 (S3Diff, img2img-turbo-style blocks): one accumulate block, two backwards stepping the same
# prepared optimizer, its zero_grad between them; on the syncing micro-step the second step sees one
# micro-batch of the second loss. A zero_grad between a generator's and a discriminator's own
# backward/step pairs (two optimizers) is the correct GAN shape.
TWO_LOSSES = """
from accelerate import Accelerator


def train(args, loader, model, disc, criterion):
    accelerator = Accelerator(gradient_accumulation_steps=4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    optimizer_disc = torch.optim.AdamW(disc.parameters(), lr=1e-4)
    model, disc, optimizer, optimizer_disc, loader = accelerator.prepare(
        model, disc, optimizer, optimizer_disc, loader
    )
    for x, y in loader:
        with accelerator.accumulate(model, disc):
            out = model(x)
            loss = criterion(out, y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            lossG = disc(model(x)).mean()
            accelerator.backward(lossG)
            {SECOND}.step()
            {SECOND}.zero_grad()
"""
C["zero_between_two_backwards_of_one_optimizer_in_accumulate"] = (
    Z,
    True,
    {"train.py": "import torch\n" + TWO_LOSSES.replace("{SECOND}", "optimizer")},
    f"train.py:{TWO_LOSSES.splitlines().index('            optimizer.zero_grad()') + 2}",
)
C["NEG_zero_between_generator_and_discriminator_steps_in_accumulate"] = (
    Z,
    False,
    {"train.py": "import torch\n" + TWO_LOSSES.replace("{SECOND}", "optimizer_disc")},
    "train.py",
)


# Round 26 (incrementvideo's class-incremental training): the previous task's model is wrapped in DDP
# with find_unused_parameters=True and handed by keyword to the training function, which forwards it
# only under ``torch.no_grad()`` as a distillation teacher: no graph runs through that wrap. The
# near-miss forwards the teacher with gradients on (its outputs reach the loss).
FU_TEACHER = """
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def train_epoch(loader, model, optimizer, model_old=None):
    model.train()
    if model_old is not None:
        model_old.eval()
    for x, y in loader:
        out = model(x)
        loss = F.cross_entropy(out, y)
        if model_old:
            TEACHER
            loss = loss + F.kl_div(out.log_softmax(-1), old.softmax(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def train_task(args, model, model_old, loader):
    model = DDP(model.cuda(), device_ids=[args.gpu])
    model_old = DDP(model_old.cuda(), device_ids=[args.gpu], find_unused_parameters=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        train_epoch(loader, model, optimizer, model_old=model_old)
"""
C["fu_NEG_teacher_forwarded_under_no_grad_by_the_training_function"] = (
    F,
    False,
    {"train.py": FU_TEACHER.replace("TEACHER", "with torch.no_grad():\n                old = model_old(x)")},
    "train.py",
)
C["fu_teacher_forwarded_with_gradients_by_the_training_function"] = (
    F,
    True,
    {"train.py": FU_TEACHER.replace("TEACHER", "old = model_old(x)")},
    "train.py",
)
C["fu_teacher_set_to_train_by_the_training_function"] = (
    F,
    True,
    {
        "train.py": FU_TEACHER.replace("model_old.eval()", "model_old.train()").replace(
            "TEACHER", "with torch.no_grad():\n                old = model_old(x)"
        )
    },
    "train.py",
)


# Round 26 (MTTOD's ``train_epoch_separate``): two losses each backpropped and each stepped under the
# window's test; the first test's block steps, then zeroes, before the second backward. The zero_grad
# follows an update that applied the window's gradients: nothing is discarded. The near-miss zeroes
# under the test with no step before it (DLRM's ordering bug: the window's gradients are wiped).
GUARDED_TWO_LOSSES = """
import torch


def train_epoch(args, model, loader, optimizer, scheduler):
    model.train()
    for step, (x, y) in enumerate(loader):
        loss_a = model.head_a(x, y) / args.accum_steps
        loss_a.backward()
        if (step + 1) % args.accum_steps == 0:
FIRST
        loss_b = model.head_b(x, y) / args.accum_steps
        loss_b.backward()
        if (step + 1) % args.accum_steps == 0:
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
"""
C["NEG_zero_after_a_step_under_the_window_test_before_a_second_backward"] = (
    Z,
    False,
    {
        "train.py": GUARDED_TWO_LOSSES.replace(
            "FIRST",
            "            optimizer.step()\n            scheduler.step()\n            optimizer.zero_grad()",
        )
    },
    "train.py",
)
C["zero_with_no_step_under_the_window_test_before_a_second_backward"] = (
    Z,
    True,
    {
        "train.py": GUARDED_TWO_LOSSES.replace(
            "FIRST", "            scheduler.step()\n            optimizer.zero_grad()"
        )
    },
    "train.py:12",
)


# Round 28 (SAM-Adapter's train.py): ``model = DDP(model, ..., find_unused_parameters=True)`` then at
# once ``model = model.module``: every forward runs on the bare module and the wrap is thrown away, so
# its flag traverses nothing. The near-misses keep the wrap: ``model_without_ddp = model.module``
# binds another name, ``model = torch.compile(model)`` compiles the wrap itself.
FU_WRAP = "    model = DDP(net.cuda(), device_ids=[local_rank], find_unused_parameters=True)\n"
C["fu_NEG_wrap_rebound_to_its_module_at_once"] = (
    F,
    False,
    main(FU_WRAP + "    model = model.module" + LOOP),
    "train.py",
)
C["fu_wrap_kept_beside_its_module"] = (
    F,
    True,
    main(FU_WRAP + "    model_without_ddp = model.module" + LOOP),
    "train.py",
)
C["fu_wrap_compiled_after"] = (
    F,
    True,
    main(FU_WRAP + "    model = torch.compile(model)" + LOOP),
    "train.py",
)

# Round 28 (pretrain-300M's ``DistributedManager.init_training``): a helper wraps the models it is
# handed and returns them, and its only call is a bare statement (``manager.init_training(model,
# optimizer)``): the trainer keeps the model it built and the wrap reaches no forward. The near-miss
# keeps what the helper returns.
FU_HELPER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Manager:
    def __init__(self, rank):
        self.rank = rank

    def init_training(self, models, optimizers):
        models = models.cuda()
        if self.rank != -1:
            if isinstance(models, list):
                models = [DDP(m, device_ids=[self.rank], find_unused_parameters=True) for m in models]
            else:
                models = DDP(models, device_ids=[self.rank], find_unused_parameters=True)
        return models, optimizers
"""
FU_CALLER = """
import torch
from dist_utils import Manager


def main(args, model, loader):
    manager = Manager(args.local_rank)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    CALL
    for x, y in loader:
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""
C["fu_NEG_helper_wrap_returned_to_a_call_that_discards_it"] = (
    F,
    False,
    {
        "dist_utils.py": FU_HELPER,
        "train.py": FU_CALLER.replace("CALL", "manager.init_training(model, optimizer)"),
    },
    "dist_utils.py",
)
C["fu_helper_wrap_returned_to_a_call_that_keeps_it"] = (
    F,
    True,
    {
        "dist_utils.py": FU_HELPER,
        "train.py": FU_CALLER.replace("CALL", "model, optimizer = manager.init_training(model, optimizer)"),
    },
    "dist_utils.py",
)
