from tests.lint.variants.set_epoch import HEAD

SETUP = """
def main(args, loader, net):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DDP(net.cuda(), device_ids=[local_rank])
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
"""


def one(body, extra=""):
    return {"train.py": HEAD + extra + SETUP + body}


A = "accum-no-sync-missing"
U = "accum-loss-unscaled"
C = {}
MOD = """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            {LOSSLINE}
            if (step + 1) % args.accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
"""
C["mod_nosync"] = (
    A,
    True,
    one(MOD.replace("{LOSSLINE}", "(loss / args.accum_steps).backward()")),
    "train.py",
)
C["mod_unscaled"] = (U, True, one(MOD.replace("{LOSSLINE}", "loss.backward()")), "train.py")
for name in [
    "gradient_accumulation_steps",
    "grad_accum",
    "accumulation_steps",
    "update_freq",
    "iters_to_accumulate",
    "accum_iter",
    "ga_steps",
    "acc_steps",
]:
    C[f"mod_nosync_{name}"] = (
        A,
        True,
        one(
            MOD.replace("args.accum_steps", f"args.{name}").replace(
                "{LOSSLINE}", f"(loss / args.{name}).backward()"
            )
        ),
        "train.py",
    )
    C[f"mod_unscaled_{name}"] = (
        U,
        True,
        one(MOD.replace("args.accum_steps", f"args.{name}").replace("{LOSSLINE}", "loss.backward()")),
        "train.py",
    )
C["mod_local_var"] = (
    A,
    True,
    one(
        MOD.replace("args.accum_steps", "accum")
        .replace("{LOSSLINE}", "(loss / accum).backward()")
        .replace("    for epoch", "    accum = args.accum\n    for epoch", 1)
    ),
    "train.py",
)
C["mod_step_not_zero"] = (
    A,
    True,
    one("""
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / args.accum_steps
            loss.backward()
            if step % args.accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
"""),
    "train.py",
)
C["micro_loop"] = (
    A,
    True,
    one("""
    for epoch in range(args.epochs):
        for x, y in loader:
            for xm, ym in zip(x.chunk(args.accum_steps), y.chunk(args.accum_steps)):
                loss = criterion(model(xm), ym) / args.accum_steps
                loss.backward()
            optimizer.step()
            optimizer.zero_grad()
"""),
    "train.py",
)
C["micro_range"] = (
    A,
    True,
    one("""
    it = iter(loader)
    for step in range(args.max_steps):
        for micro in range(args.accum_steps):
            x, y = next(it)
            loss = criterion(model(x), y)
            (loss / args.accum_steps).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
"""),
    "train.py",
)
C["micro_unscaled"] = (
    U,
    True,
    one("""
    it = iter(loader)
    for step in range(args.max_steps):
        for micro in range(args.accum_steps):
            x, y = next(it)
            loss = criterion(model(x), y)
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
"""),
    "train.py",
)
C["scaler_amp"] = (
    A,
    True,
    one("""
    scaler = torch.cuda.amp.GradScaler()
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            with torch.autocast("cuda", dtype=torch.float16):
                loss = criterion(model(x), y) / args.accum_steps
            scaler.scale(loss).backward()
            if (step + 1) % args.accum_steps == 0:
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
"""),
    "train.py",
)
C["step_fn_other_file"] = (
    A,
    True,
    {
        "train.py": HEAD
        + "from engine import train_one_epoch\n"
        + SETUP
        + """
    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer, criterion, args.accum_steps)
""",
        "engine.py": "import torch\n"
        + """
def train_one_epoch(model, loader, optimizer, criterion, accum_steps):
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
    },
    "engine.py",
)
C["class_method"] = (
    A,
    True,
    {
        "train.py": HEAD
        + """
class Trainer:
    def __init__(self, net, args):
        dist.init_process_group("nccl")
        self.model = DDP(net.cuda())
        self.optimizer = torch.optim.AdamW(self.model.parameters())
        self.accum = args.accum_steps

    def train(self, loader):
        for i, (x, y) in enumerate(loader):
            loss = self.model(x, y)
            loss = loss / self.accum
            loss.backward()
            if (i + 1) % self.accum == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""
    },
    "train.py",
)
C["NEG_no_sync"] = (
    A,
    False,
    one(
        """
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            sync = (step + 1) % args.accum_steps == 0
            ctx = model.no_sync() if not sync else contextlib.nullcontext()
            with ctx:
                loss = criterion(model(x), y) / args.accum_steps
                loss.backward()
            if sync:
                optimizer.step()
                optimizer.zero_grad()
""",
        "import contextlib\n",
    ),
    "train.py",
)
C["NEG_require_sync"] = (
    A,
    False,
    one("""
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            model.require_backward_grad_sync = (step + 1) % args.accum_steps == 0
            loss = criterion(model(x), y) / args.accum_steps
            loss.backward()
            if (step + 1) % args.accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
"""),
    "train.py",
)
C["NEG_no_accum"] = (
    A,
    False,
    one("""
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if step % args.log_every == 0:
                print(step)
"""),
    "train.py",
)
C["NEG_unscaled_divided_helper"] = (
    U,
    False,
    one(MOD.replace("{LOSSLINE}", "loss = loss / args.accum_steps\n            loss.backward()")),
    "train.py",
)

# Round 23: micro-steps that run a method of the inner module (``model.module.forward_chunk(x)``,
# LayoutDIT) or of a local bound to it (``net = model.module if ddp else model``; ``net.score(x)``,
# proemb) never call the DDP wrap: no reducer runs, nothing to skip.
CHUNKS = """
    for epoch in range(args.epochs):
        for x, y in loader:
            for xm, ym in zip(x.chunk(args.accum_steps), y.chunk(args.accum_steps)):
                loss = criterion({FORWARD}, ym) / args.accum_steps
                loss.backward()
            optimizer.step()
            optimizer.zero_grad()
"""
C["NEG_micro_steps_through_inner_module_method"] = (
    A,
    False,
    one(CHUNKS.replace("{FORWARD}", "model.module.forward_chunk(xm)")),
    "train.py",
)
C["micro_steps_through_wrap_beside_inner_state_dict"] = (
    A,
    True,
    one(
        CHUNKS.replace("{FORWARD}", "model(xm)").replace(
            "loss.backward()", "loss.backward()\n                model.module.state_dict()"
        )
    ),
    "train.py",
)
# ... and a per-item backward loop in a helper every call of which sits in ``with model.no_sync():``
# (proemb): the caller skips the all-reduce of every backward the helper runs.
ITEM_GRADS = (
    """
def item_grads(model, criterion, xs, ys):
    for x, y in zip(xs, ys):
        loss = criterion(model(x), y) / len(xs)
        loss.backward()
"""
    + SETUP
    + """
    for epoch in range(args.epochs):
        for xs, ys in loader:
            {CALL}
            optimizer.step()
            optimizer.zero_grad()
"""
)
C["helper_micro_steps_called_without_no_sync"] = (
    A,
    True,
    {"train.py": HEAD + ITEM_GRADS.replace("{CALL}", "item_grads(model, criterion, xs, ys)")},
    "train.py",
)
C["NEG_helper_micro_steps_called_inside_no_sync"] = (
    A,
    False,
    {
        "train.py": HEAD
        + ITEM_GRADS.replace(
            "{CALL}",
            "with model.no_sync() if args.ddp else nullcontext():\n                item_grads(model, criterion, xs, ys)",
        )
    },
    "train.py",
)

# Round 23: a loop over micro-step groups around the backward loop, with one step after both
# (Squirrel's ``for inter_step in range(inter_size): for b in split_batch(batch, k): backward``).
GROUPS = """
    it = iter(loader)
    for step in range(args.max_steps):
        for group in range(args.inter_size):
            x, y = next(it)
            for xm, ym in zip(x.chunk(args.sub_size), y.chunk(args.sub_size)):
                loss = criterion(model(xm), ym) / (args.inter_size * args.sub_size)
                loss.backward()
            {STEP_IN_GROUP}
        optimizer.step()
        optimizer.zero_grad()
"""
C["micro_step_groups"] = (A, True, one(GROUPS.replace("{STEP_IN_GROUP}", "")), "train.py")
C["NEG_micro_step_groups_each_stepping"] = (
    A,
    False,
    one(
        GROUPS.replace("{STEP_IN_GROUP}", "optimizer.step()\n            optimizer.zero_grad()").replace(
            "for xm, ym in zip(x.chunk(args.sub_size), y.chunk(args.sub_size)):\n                loss = criterion(model(xm), ym) / (args.inter_size * args.sub_size)\n                loss.backward()",
            "with model.no_sync():\n                for xm, ym in zip(x.chunk(args.sub_size)[:-1], y.chunk(args.sub_size)[:-1]):\n                    (criterion(model(xm), ym) / args.sub_size).backward()\n            (criterion(model(x.chunk(args.sub_size)[-1]), y.chunk(args.sub_size)[-1]) / args.sub_size).backward()",
        ),
    ),
    "train.py",
)

# Round 23: Lightning Fabric's ``fabric.backward(loss)`` leaves accumulation to the loop and never
# divides the loss (OpenThaiGPT's hand-made micro-steps under ``fabric.no_backward_sync``).
FABRIC = """
import lightning as L


def train(args, loader, model, optimizer, criterion):
    fabric = L.Fabric(strategy="ddp", devices=4)
    fabric.launch()
    model, optimizer = fabric.setup(model, optimizer)
    loader = fabric.setup_dataloaders(loader)
    for epoch in range(args.epochs):
        for i, (x, y) in enumerate(loader):
            is_accumulating = (i + 1) % args.accum_steps != 0
            with fabric.no_backward_sync(model, enabled=is_accumulating):
                loss = criterion(model(x), y)
                fabric.backward({LOSS})
            if not is_accumulating:
                optimizer.step()
                optimizer.zero_grad()
"""
C["fabric_backward_undivided"] = (U, True, {"train.py": FABRIC.replace("{LOSS}", "loss")}, "train.py")
C["NEG_fabric_backward_divided"] = (
    U,
    False,
    {"train.py": FABRIC.replace("{LOSS}", "loss / args.accum_steps")},
    "train.py",
)

# Round 23 (fixer 5): the sync turned off before the micro-batch loop, in the block around it (apex
# DDP's ``model.disable_allreduce()`` ahead of the loop over all but the last chunk, then
# ``enable_allreduce()`` for the last one: Wolf's experiments/train.py); a toggle inside an earlier loop
# of its own, or set to ``True``, skips nothing for this loop.
CHUNKS = """
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            xs, ys = x.chunk(args.batch_steps), y.chunk(args.batch_steps)
{BEFORE}
            for xm, ym in zip(xs[:-1], ys[:-1]):
                loss = criterion(model(xm), ym) / len(x)
                loss.backward()
            model.enable_allreduce()
            (criterion(model(xs[-1]), ys[-1]) / len(x)).backward()
            optimizer.step()
"""
C["NEG_chunks_allreduce_disabled_before_loop"] = (
    A,
    False,
    one(
        CHUNKS.replace(
            "{BEFORE}", "            if args.distributed:\n                model.disable_allreduce()"
        )
    ),
    "train.py",
)
C["NEG_chunks_grad_sync_off_before_loop"] = (
    A,
    False,
    one(CHUNKS.replace("{BEFORE}", "            model.require_backward_grad_sync = False")),
    "train.py",
)
C["chunks_grad_sync_on_before_loop"] = (
    A,
    True,
    one(CHUNKS.replace("{BEFORE}", "            model.require_backward_grad_sync = True")),
    "train.py",
)
C["chunks_toggle_in_earlier_loop"] = (
    A,
    True,
    one(
        CHUNKS.replace(
            "{BEFORE}",
            "            for warm in range(args.warmup_chunks):\n                model.disable_allreduce()\n"
            "                model.enable_allreduce()",
        )
    ),
    "train.py",
)

# Round 23 (fixer 5): accelerate launched on shipped configs that all say ``distributed_type: FSDP``
# (HALOs: ``accelerate launch --config_file accelerate_config/fsdp_4gpu.yaml``): ``prepare`` wraps in
# FSDP, whose reduce-scatter is not this rule; a launch on a MULTI_GPU (DDP) config still is.
ACC_LOOP = """
from accelerate import Accelerator


def train(args, loader, model, optimizer, criterion):
    accelerator = Accelerator()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(args.epochs):
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / args.accum_steps
            accelerator.backward(loss)
            if (i + 1) % args.accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
"""


def acc_launch(kind: str) -> dict[str, str]:
    return {
        "train.py": ACC_LOOP,
        "scripts/run.sh": "accelerate launch \\\n    --config_file configs/acc_4gpu.yaml \\\n    train.py --accum_steps 4\n",
        "configs/acc_4gpu.yaml": f"compute_environment: LOCAL_MACHINE\ndistributed_type: {kind}\nnum_processes: 4\n",
    }


C["NEG_accelerate_launched_fsdp_configs"] = (A, False, acc_launch("FSDP"), "train.py")
C["accelerate_launched_multi_gpu_config"] = (A, True, acc_launch("MULTI_GPU"), "train.py")

# ... and a shipped script that runs ``accelerate launch`` with no ``--config_file`` beside the FSDP one
# (accelerate's examples/slurm: submit_multigpu.sh next to submit_multinode_fsdp.sh) takes the default
# configuration, DDP on several GPUs.
C["accelerate_launched_fsdp_config_and_plain_multi_gpu"] = (
    A,
    True,
    {
        **acc_launch("FSDP"),
        "scripts/run_plain.sh": "accelerate launch --num_processes 4 train.py --accum_steps 4\n",
    },
    "train.py",
)

# Round 23 (regression the older corpus showed): a method of the inner module called for its effect
# inside the loop (CMedGPT's ``model_to_save = model.module if hasattr(model, "module") else model``;
# ``model_to_save.save_pretrained(d)``) runs no forward: the micro-steps still run the DDP wrap
# (``model.forward(x)``).
C["micro_steps_beside_inner_module_checkpoint"] = (
    A,
    True,
    one(
        MOD.replace("loss = criterion(model(x), y)", "loss = criterion(model.forward(x), y)").replace(
            "{LOSSLINE}",
            "(loss / args.accum_steps).backward()\n"
            '            model_to_save = model.module if hasattr(model, "module") else model\n'
            "            model_to_save.save_pretrained(args.out)",
        )
    ),
    "train.py",
)

# Round 24 (TaBERT's fairseq-style trainer): a step over a group of micro-batches that divides each
# micro-batch's summed loss by that micro-batch's own size (``sample["sample_size"]``, a token count)
# makes a per-micro-batch mean, as undivided by the group's length as a mean-reduced loss; the step
# still sums them. A count from before the loop (all micro-batches' tokens) or the group's length is
# the step's normaliser and divides.
GROUP_STEP = """
    sum_criterion = nn.CrossEntropyLoss(reduction="sum")
    for samples in loader:
        optimizer.zero_grad()
        {BEFORE}
        for i, sample in enumerate(samples):
            sample = {k: v.cuda() for k, v in sample.items()}
            sample_size = int(sample["sample_size"])
            total_loss = sum_criterion(model(sample["x"]), sample["y"])
            loss = total_loss / {DIVISOR}
            loss.backward()
        optimizer.step()
"""
C["group_step_per_micro_batch_size"] = (
    U,
    True,
    one(GROUP_STEP.replace("{BEFORE}", "").replace("{DIVISOR}", "(sample_size or 1)")),
    "train.py",
)
C["group_step_per_micro_batch_size_inline"] = (
    U,
    True,
    one(GROUP_STEP.replace("{BEFORE}", "").replace("{DIVISOR}", 'sample["x"].size(0)')),
    "train.py",
)
C["NEG_group_step_global_size"] = (
    U,
    False,
    one(
        GROUP_STEP.replace("{BEFORE}", 'n_total = sum(int(s["sample_size"]) for s in samples)').replace(
            "{DIVISOR}", "n_total"
        )
    ),
    "train.py",
)
C["NEG_group_step_group_length"] = (
    U,
    False,
    one(GROUP_STEP.replace("{BEFORE}", "").replace("{DIVISOR}", "len(samples)")),
    "train.py",
)
C["NEG_group_step_size_times_count"] = (
    U,
    False,
    one(GROUP_STEP.replace("{BEFORE}", "").replace("{DIVISOR}", "(sample_size * args.accum_steps)")),
    "train.py",
)
# ... and fairseq's own trainer, which sums the micro-batches' losses and then scales the gradients
# by the step's sample size through its optimizer (``optimizer.multiply_grads``), divides.
C["NEG_group_step_fairseq_multiply_grads"] = (
    U,
    False,
    one(
        GROUP_STEP.replace("{BEFORE}", "")
        .replace("{DIVISOR}", "(sample_size or 1)")
        .replace(
            "        optimizer.step()",
            "        optimizer.multiply_grads(1.0 / len(samples))\n        optimizer.step()",
        )
    ),
    "train.py",
)

# Round 24 (ReLoRA's torchrun_main): micro-steps that leave early unless the step is due (``if
# global_step % accum != 0: continue``), after a membership skip of listed updates (``if update_step
# in args.skip_batches: continue``; ``update_step`` counts the updates so far): the membership test
# picks batches, it is no accumulation guard, so the backward after it still runs on every micro-step.
SKIP_LISTED = """
    update_step = 0
    for global_step, (x, y) in enumerate(loader, 1):
        if update_step in args.skip_batches:
            continue
        {TOGGLE}
        loss = criterion(model(x), y)
        (loss / args.accum_steps).backward()
        if global_step % args.accum_steps != 0:
            continue
        optimizer.step()
        optimizer.zero_grad()
        update_step += 1
"""
C["skip_listed_updates_then_early_exit"] = (A, True, one(SKIP_LISTED.replace("{TOGGLE}", "")), "train.py")
C["NEG_skip_listed_updates_sync_toggled"] = (
    A,
    False,
    one(
        SKIP_LISTED.replace(
            "{TOGGLE}", "model.require_backward_grad_sync = global_step % args.accum_steps == 0"
        )
    ),
    "train.py",
)

# Round 24 (TencentPretrain's trainer): the micro-step is one branch of an if/else on a configuration
# choice the loop never changes (``if args.pipeline_parallel > 1: <the pipeline engine's own step>
# else: <forward; backward>``): in a run that takes the backward branch it runs on every pass, and the
# step under ``step % accum == 0`` makes it an accumulation loop. A branch picked by something the loop
# changes (alternating passes) says nothing about every pass.
CHOSEN_BRANCH = """
    step = 0
    {BEFORE}
    for x, y in loader:
        step += 1
        if {TEST}:
            loss = pipeline_engine.train_batch(x)
        else:
            loss = criterion(model(x), y) / args.accum_steps
            loss.backward()
        {AFTER}
        if step % args.accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""
C["backward_in_branch_of_config_choice"] = (
    A,
    True,
    one(
        CHOSEN_BRANCH.replace("{TEST}", "args.pipeline_parallel > 1")
        .replace("{BEFORE}", "pass")
        .replace("{AFTER}", "pass")
    ),
    "train.py",
)
C["NEG_backward_in_branch_of_alternating_choice"] = (
    A,
    False,
    one(
        CHOSEN_BRANCH.replace("{TEST}", "pipeline_turn")
        .replace("{BEFORE}", "pipeline_turn = False")
        .replace("{AFTER}", "pipeline_turn = not pipeline_turn")
    ),
    "train.py",
)

# Round 24 (SheepRL's A2C): a loss helper handed a reduction that configuration picks
# (``policy_loss(logp, adv, cfg.loss_reduction)``, whose sum over the mini-batches the code documents
# as the design), or a criterion built with one, is not provably a mean; a literal reduction is.
REDUCED = """
    import torch.nn.functional as F
    for step, (x, y) in enumerate(loader):
        loss = {LOSS}
        loss.backward()
        if (step + 1) % args.accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""
C["loss_function_literal_mean_reduction"] = (
    U,
    True,
    one(REDUCED.replace("{LOSS}", 'F.cross_entropy(model(x), y, reduction="mean")')),
    "train.py",
)
C["NEG_loss_helper_configured_reduction"] = (
    U,
    False,
    one(REDUCED.replace("{LOSS}", "policy_loss(model(x), y, args.loss_reduction)")),
    "train.py",
)
C["NEG_criterion_built_with_configured_reduction"] = (
    U,
    False,
    one(
        REDUCED.replace("{LOSS}", "cfg_criterion(model(x), y)").replace(
            "    for step",
            "    cfg_criterion = nn.CrossEntropyLoss(reduction=args.reduction)\n    for step",
            1,
        )
    ),
    "train.py",
)

# Round 25: losses the tracer reads through more spellings. The logistic GAN loss written out over the
# discriminator's logits (pi-GAN ``F.softplus(-g_preds).mean()``, ``g_preds`` cut to its top-k), only
# over a forward's output; the product as a function (HPA ``torch.mul(loss, w)``), only by a weight;
# a forward picked by a condition (DIAMOND ``loss, metrics = model(batch) if batch is not None else
# model()``), only when each branch is one; a loss object's method (SimXNS ``loss, is_correct =
# loss_function.calc(...)``), not an averager's; the model's own step method (VL-T5 ``results =
# self.model.train_step(batch)`` ... ``results["loss"]``), not a trainer's.
SPELLED = """
    import torch.nn.functional as F
    for step, (x, y) in enumerate(loader):
        {PREP}
        loss = {LOSS}
        loss.backward()
        if (step + 1) % args.accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def spelled(loss, prep="pass"):
    return one(SPELLED.replace("{PREP}", prep).replace("{LOSS}", loss))


C["gan_softplus_over_topk_forward"] = (
    U,
    True,
    spelled(
        "F.softplus(-preds).mean() + penalty",
        "preds, latent = model(x)\n        preds = torch.topk(preds, 4, dim=0).values\n        penalty = 0",
    ),
    "train.py",
)
C["NEG_softplus_over_unknown_scores"] = (
    U,
    False,
    spelled("F.softplus(-scores).mean()", "scores = compute_scores(x)"),
    "train.py",
)
C["torch_mul_by_weight"] = (U, True, spelled("torch.mul(criterion(model(x), y), w).mean()"), "train.py")
C["NEG_torch_mul_by_inverse_count"] = (
    U,
    False,
    spelled("torch.mul(criterion(model(x), y), 1.0 / args.accum_steps)"),
    "train.py",
)
C["forward_picked_by_condition_unpacked"] = (
    U,
    True,
    one(
        SPELLED.replace("{PREP}", "pass").replace(
            "loss = {LOSS}", "loss, metrics = model(x) if x is not None else model()"
        )
    ),
    "train.py",
)
C["NEG_forward_or_helper_picked_by_condition"] = (
    U,
    False,
    one(
        SPELLED.replace("{PREP}", "pass").replace(
            "loss = {LOSS}", "loss, metrics = model(x) if x is not None else scaled_step(x)"
        )
    ),
    "train.py",
)
C["loss_object_method_unpacked"] = (
    U,
    True,
    one(
        SPELLED.replace("{PREP}", "loss_function = BiEncoderNllLoss()").replace(
            "loss = {LOSS}", "loss, is_correct = loss_function.calc(model(x), y)"
        )
    ),
    "train.py",
)
C["NEG_averager_method_unpacked"] = (
    U,
    False,
    one(
        SPELLED.replace("{PREP}", "loss_averager = Averager()").replace(
            "loss = {LOSS}", "loss, count = loss_averager.calc(model(x), y)"
        )
    ),
    "train.py",
)
C["model_train_step_results_loss"] = (
    U,
    True,
    spelled('results["loss"]', "results = model.module.train_step((x, y))"),
    "train.py",
)
C["NEG_trainer_train_step_results_loss"] = (
    U,
    False,
    spelled('results["loss"]', "results = trainer.train_step((x, y))"),
    "train.py",
)

# Round 25 (VL-T5's caption trainer): the step flag set to a constant in the branch of a ``%`` test
# (``elif step_i % accum == 0 or last: update = True``) carries that test, as ``update = step_i % accum
# == 0`` does; a flag set under another test (a warm-up freeze) says nothing about micro-steps.
FLAGGED = """
    for step_i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()
        update = True
        if args.gradient_accumulation_steps > 1:
            if step_i == 0:
                update = False
            elif {TEST}:
                update = True
            else:
                update = False
        if update:
            optimizer.step()
            optimizer.zero_grad()
"""
C["step_flag_set_under_modulo"] = (
    A,
    True,
    one(FLAGGED.replace("{TEST}", "step_i % args.gradient_accumulation_steps == 0")),
    "train.py",
)
C["step_flag_set_under_modulo_unscaled"] = (
    U,
    True,
    one(FLAGGED.replace("{TEST}", "step_i % args.gradient_accumulation_steps == 0")),
    "train.py",
)
C["NEG_step_flag_set_under_warmup_test"] = (
    A,
    False,
    one(
        FLAGGED.replace("{TEST}", "step_i > args.warmup_steps").replace(
            "args.gradient_accumulation_steps > 1", "args.freeze_warmup"
        )
    ),
    "train.py",
)

# Round 28 (pytorch-solo-leveling's DDP lab): a top-level function that builds its own model from a
# class, optimises it and never wraps it, beside the file's DDP worker, is a single-process demo:
# its micro-steps run no reducer. The same function wrapping its model in DDP accumulates under DDP.
OWN_MODEL = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


def worker(rank, args, loader):
    dist.init_process_group("nccl", rank=rank, world_size=args.world_size)
    model = DDP(Net().cuda(rank), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


def demo_accumulation(args, loader):
    device = torch.device("cuda")
    model = Net().to(device)
    {WRAP}
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    optimizer.zero_grad()
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / args.accum_steps
        loss.backward()
        if (step + 1) % args.accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""
C["own_model_wrapped_in_its_function"] = (
    A,
    True,
    {"train.py": HEAD + OWN_MODEL.replace("{WRAP}", "model = DDP(model, device_ids=[0])")},
    "train.py",
)
C["NEG_own_unwrapped_model_beside_ddp_worker"] = (
    A,
    False,
    {"train.py": HEAD + OWN_MODEL.replace("{WRAP}", "pass")},
    "train.py",
)

# Round 28 (pretrain-300M's ARDM trainer): a helper that backprops the loss it is handed, as it is
# (``loss.backward()``, or apex ``scale_loss`` under fp16), is a backward of the caller's loss: an
# undivided loss handed to it in an accumulation loop is summed. A helper that divides on the way is not.
MANAGER = """
import torch
from apex import amp


class DistributedManager:
    def __init__(self, args):
        self.args = args

    def backward_loss(self, loss, model, optimizer):
        if self.args.fp16:
            with amp.scale_loss(loss, optimizer) as scaled_loss:
                scaled_loss.backward()
        else:
            {BACKWARD}
"""
MANAGED = """
from dist_utils import DistributedManager


def main(args, loader, model, optimizer):
    manager = DistributedManager(args)
    update_count = 0
    for batch in loader:
        loss = model(batch)
        manager.backward_loss(loss, model, optimizer)
        update_count += 1
        if update_count % args.gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""
C["project_helper_backprops_handed_loss"] = (
    U,
    True,
    {"dist_utils.py": MANAGER.replace("{BACKWARD}", "loss.backward()"), "train.py": MANAGED},
    "train.py:10",
)
C["NEG_project_helper_divides_handed_loss"] = (
    U,
    False,
    {
        "dist_utils.py": MANAGER.replace(
            "{BACKWARD}", "(loss / self.args.gradient_accumulation_steps).backward()"
        ),
        "train.py": MANAGED,
    },
    "train.py",
)
SAME_FILE_HELPER = """
def backward_loss(loss, scaler{EXTRA}):
    if scaler is not None:
        scaler.scale({ROOT}).backward()
    else:
        ({ROOT}).backward()
"""
C["same_file_helper_backprops_handed_loss"] = (
    U,
    True,
    one(
        MOD.replace("{LOSSLINE}", "backward_loss(loss, None)"),
        SAME_FILE_HELPER.replace("{EXTRA}", "").replace("{ROOT}", "loss"),
    ),
    "train.py",
)
C["NEG_same_file_helper_divides_handed_loss"] = (
    U,
    False,
    one(
        MOD.replace("{LOSSLINE}", "backward_loss(loss, None, args.accum_steps)"),
        SAME_FILE_HELPER.replace("{EXTRA}", ", accum").replace("{ROOT}", "loss / accum"),
    ),
    "train.py",
)
# ... and a loss callee handed the accumulation count or a divisor (mmf's ``extract_loss(report,
# loss_divisor)``) may divide by it: not a raw loss; the same callee handed a margin is one.
C["loss_callee_handed_a_margin"] = (U, True, spelled("compute_loss(model(x), y, args.margin)"), "train.py")
C["NEG_loss_callee_handed_the_divisor"] = (
    U,
    False,
    spelled("compute_loss(model(x), y, args.accum_steps)"),
    "train.py",
)
