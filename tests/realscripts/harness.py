"""Real-script corpus: public training scripts, unmodified, run bare and under `ddp-doctor run`, and
the report scored against the verdicts expected from reading each script (docs/real-scripts.md).

No third-party source is stored in this repository. Each entry names a repository, a pinned commit
and the paths to extract; the runner extracts them at run time from a git mirror
(`--mirrors DIR`, laid out as DIR/<owner>+<name>/repo, as the code-search `fetch` tool and
bench/lint_real_fetch.py use) or from a file cache (`--cache DIR`, DIR/<owner>+<name>/<commit>/<path>,
for repositories whose snapshot is too large to mirror). A missing source makes the row
"not available", never a failure. What is kept outside the script:
  * the CPU/gloo shim (tests/realscripts/shim/sitecustomize.py), named per row;
  * tiny sizes, through the script's own flags, config overrides or documented env defaults;
  * local inputs (tests/realscripts/corpus_data.py) at the paths the script reads.
The bare and the probed run each start in a fresh extraction, so a checkpoint written by the first
cannot change the second.

Scoring, per row (written before the first probed run; see the docs):
  expected "confirmed": a real issue of the code at these flags. Reported confirmed: hit;
      not-measured/inconclusive: "not measured" (honest); ruled-out or absent: miss.
  "either": judged debatable (a literal truth the author may intend); never scored.
  every other confirmed finding is a false alarm.
  crash: `report` exits other than 0/1 or prints a traceback; probe errors: probe_error records and
  "probe not started" lines; exit codes: bare vs probed.

    python bench/real_scripts.py --mirrors /work/.mirror --cache /work/.realscripts-cache \
        --out /tmp/realscripts [--only ID ...] [--json results.json] [--markdown table.md]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.realscripts import corpus_data

HERE = Path(__file__).resolve().parent  # tests/realscripts: this harness, its shim, nodes.py, the fixtures
ROOT = HERE.parents[1]
SHIM = HERE / "shim"
NODES = HERE / "nodes.py"
DDP_DOCTOR = str(Path(sys.executable).parent / "ddp-doctor")  # the console script of this venv

# The finding the analysis gives when a model does not train at all (issue 22, item 4). Its ID is
# chosen by the analysis; every ID listed here counts as that finding.
NOT_LEARNING = ("not-learning", "training-not-progressing", "no-progress")


@dataclass(frozen=True)
class Expect:
    finding: str
    verdict: str  # "confirmed" | "absent" | "either"
    why: str
    # set on an expectation added after the first probed run: how the issue was verified without the
    # probe (the docs list these apart; the table written before the run is otherwise unchanged)
    after_run: str = ""


@dataclass(frozen=True)
class Script:
    id: str
    repo: str
    commit: str
    path: str  # the training script, repository-relative
    extract: tuple[str, ...]  # repository paths extracted beside it
    stack: str
    cmd: tuple[str, ...]  # run in `cwd`; {py} = the interpreter, {nodes} = nodes.py, {port} = a free port
    cwd: str  # repository-relative working directory
    expect: tuple[Expect, ...]
    shim: str = "cpu"
    env: dict[str, str] = field(default_factory=dict)
    setup: Callable[[Path], None] | None = None
    venv: str = "main"  # "main" (torch 2.13 CPU) or "vision" (torch + torchvision: --vision-python)
    pythonpath: tuple[str, ...] = ()  # repository-relative dirs put on PYTHONPATH (a library run from source)
    timeout: int = 600
    notes: str = ""
    unavailable: str = ""  # a row that cannot run here, and why (kept in the table, never run)
    # the checkpoint the script writes (a glob under cwd): its tensors from the bare and the probed run
    # are compared bit for bit (parameters, buffers, optimizer state: the probe must not change numerics)
    checkpoint: str = ""


SEED = 1234
LOCAL = "local"  # the CI fixtures: tests/realscripts/scripts, written for this repository
FIXTURE_DIR = HERE / "scripts"
PT_EXAMPLES = ("pytorch/examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8")
LIGHTNING = ("Lightning-AI/pytorch-lightning", "7f0c3436cd3f6ad3753125672024fc415cbcb414")
TRANSFORMERS = ("huggingface/transformers", "00d481d18f914b55e65faa31e82321629691eadb")

TORCHRUN = ("{py}", "-m", "torch.distributed.run", "--standalone")

# Lightning reads Trainer defaults from PL_TRAINER_<ARG> (explicit arguments in the script win).
PL_DDP = {
    "PL_TRAINER_ACCELERATOR": "cpu",
    "PL_TRAINER_DEVICES": "2",
    "PL_TRAINER_STRATEGY": "ddp",
    "PL_TRAINER_ENABLE_PROGRESS_BAR": "0",
    "PL_TRAINER_LOGGER": "0",
}

NO_DL_ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "WANDB_MODE": "disabled",
}

SCRIPTS: tuple[Script, ...] = (
    Script(
        id="ddp-tutorial-torchrun",
        repo=PT_EXAMPLES[0],
        commit=PT_EXAMPLES[1],
        path="distributed/ddp-tutorial-series/multigpu_torchrun.py",
        extract=("distributed/ddp-tutorial-series",),
        stack="DDP, torchrun, SGD",
        cmd=(*TORCHRUN, "--nproc_per_node", "2", "multigpu_torchrun.py", "5", "2", "--batch_size", "64"),
        cwd="distributed/ddp-tutorial-series",
        checkpoint="snapshot.pt",
        expect=(
            Expect(
                "not-learning",
                "confirmed",
                "cross_entropy over the single output column (Linear(20, 1)) with float targets of shape "
                "(B, 1): log_softmax of one logit is 0, so the loss is -0.0 and every gradient is exactly 0",
            ),
            Expect(
                "set-epoch-missing",
                "absent",
                "set_epoch(epoch) is called every epoch; the b_sz peek `next(iter(loader))` runs before it",
            ),
            Expect("sampler-missing", "absent", "DistributedSampler(dataset)"),
        ),
    ),
    Script(
        id="ddp-tutorial-multinode-3ranks",
        repo=PT_EXAMPLES[0],
        commit=PT_EXAMPLES[1],
        path="distributed/ddp-tutorial-series/multinode.py",
        extract=("distributed/ddp-tutorial-series",),
        stack="DDP, torchrun 3 ranks (not a power of two), SGD",
        cmd=(*TORCHRUN, "--nproc_per_node", "3", "multinode.py", "4", "2", "--batch_size", "48"),
        cwd="distributed/ddp-tutorial-series",
        checkpoint="snapshot.pt",
        expect=(
            Expect(
                "not-learning",
                "confirmed",
                "the same one-column cross_entropy as multigpu_torchrun.py: loss 0",
            ),
            Expect("set-epoch-missing", "absent", "set_epoch(epoch) after the b_sz peek"),
            Expect("sampler-missing", "absent", "DistributedSampler(dataset)"),
        ),
    ),
    Script(
        id="ddp-tutorial-spawn",
        repo=PT_EXAMPLES[0],
        commit=PT_EXAMPLES[1],
        path="distributed/ddp-tutorial-series/multigpu.py",
        extract=("distributed/ddp-tutorial-series",),
        stack="DDP, torch.multiprocessing.spawn (world = cuda.device_count()), SGD",
        cmd=("{py}", "multigpu.py", "4", "2", "--batch_size", "64"),
        cwd="distributed/ddp-tutorial-series",
        shim="cpu,gpus=2",
        checkpoint="checkpoint.pt",
        expect=(
            Expect("not-learning", "confirmed", "the same one-column cross_entropy: loss 0, gradients 0"),
            Expect("set-epoch-missing", "absent", "set_epoch(epoch) after the b_sz peek"),
        ),
        notes="MASTER_PORT is hard-coded to 12355 by the script",
    ),
    Script(
        id="ddp-example-one-step",
        repo=PT_EXAMPLES[0],
        commit=PT_EXAMPLES[1],
        path="distributed/ddp/example.py",
        extract=("distributed/ddp",),
        stack="DDP, torchrun, one optimizer step, MSELoss",
        cmd=(*TORCHRUN, "--nproc_per_node", "2", "example.py"),
        cwd="distributed/ddp",
        shim="cpu,accel=2",
        expect=(
            Expect("not-learning", "absent", "one step: nothing can be said about progress"),
            Expect(
                "sampler-missing",
                "either",
                "torch.randn(20, 10) from torch's fixed default seed: both ranks draw the same batch, but "
                "there is one micro-batch and no DataLoader (the threshold needs a fraction of several)",
            ),
        ),
    ),
    Script(
        id="fsdp2-example",
        repo=PT_EXAMPLES[0],
        commit=PT_EXAMPLES[1],
        path="distributed/FSDP2/example.py",
        extract=("distributed/FSDP2",),
        stack="FSDP2 fully_shard, torchrun, Adam, clip_grad_norm_",
        cmd=(*TORCHRUN, "--nproc_per_node", "2", "example.py"),
        cwd="distributed/FSDP2",
        shim="cpu,accel=2",
        checkpoint="checkpoints/*/*.pt",
        expect=(
            Expect(
                "sampler-missing",
                "confirmed",
                "torch.manual_seed(0) on every rank, then torch.randint for the batch: every rank trains on "
                "identical tokens (no sharding of the random data)",
            ),
            Expect("not-learning", "absent", "loss = logits.sum() falls every step under Adam lr 1e-2"),
            Expect(
                "nonfinite",
                "confirmed",
                "Transformer.reset_parameters resets the embeddings, norm and output but not `layers`: after "
                "model.to_empty(device) the blocks keep uninitialised memory, so the loss is NaN from step 0",
                after_run=(
                    "seen in the first probed run; verified without the probe: model.py built on meta, "
                    "to_empty('cpu') + reset_parameters() leaves non-finite weights in layers.3/4 and "
                    "model(x).sum() is nan"
                ),
            ),
            Expect("warmup-short", "absent", "no spikes expected in 10 steps (the rule needs one)"),
        ),
    ),
    Script(
        id="mingpt-ddp",
        repo=PT_EXAMPLES[0],
        commit=PT_EXAMPLES[1],
        path="distributed/minGPT-ddp/mingpt/main.py",
        extract=("distributed/minGPT-ddp",),
        stack="DDP, torchrun, hydra config, AdamW(0.9, 0.95), clip_grad_norm_ 1.0",
        cmd=(
            *TORCHRUN,
            "--nproc_per_node",
            "2",
            "main.py",
            "data_config.path=data/input.txt",
            "data_config.truncate=0.004",
            "data_config.block_size=32",
            "gpt_config.n_layer=2",
            "gpt_config.n_head=2",
            "gpt_config.n_embd=32",
            "trainer_config.max_epochs=2",
            "trainer_config.batch_size=32",
            "trainer_config.data_loader_workers=0",
            "trainer_config.use_amp=False",
            "trainer_config.save_every=1",
        ),
        cwd="distributed/minGPT-ddp/mingpt",
        shim="cpu,accel=2",
        checkpoint="gpt_snapshot.pt",
        expect=(
            Expect(
                "set-epoch-missing",
                "absent",
                "set_epoch(epoch) on the train sampler; the test loader has its own DistributedSampler, "
                "never set_epoch'd, but it feeds no optimizer step",
            ),
            Expect("sampler-missing", "absent", "DistributedSampler on both loaders"),
            Expect("warmup-short", "absent", "no scheduler, and no spike expected on this tiny model"),
        ),
        notes="the test loader's sampler has no set_epoch (eval only); epoch numbers start at 1",
    ),
    Script(
        id="nanogpt",
        repo="karpathy/nanoGPT",
        commit="3adf61e154c3fe3fca428ad6bc3818b27a3b8291",
        path="train.py",
        extract=("train.py", "model.py", "configurator.py"),
        stack="DDP, torchrun, no_sync via require_backward_grad_sync, grad accumulation 4, AdamW, cosine lr",
        cmd=(
            *TORCHRUN,
            "--nproc_per_node",
            "2",
            "train.py",
            "--dataset=shakespeare_char",
            "--device=cpu",
            "--backend=gloo",
            "--compile=False",
            "--dtype=float32",
            "--batch_size=4",
            "--block_size=32",
            "--n_layer=2",
            "--n_head=2",
            "--n_embd=32",
            "--max_iters=60",
            "--lr_decay_iters=60",
            "--warmup_iters=40",
            "--eval_interval=30",
            "--eval_iters=2",
            "--log_interval=1",
            "--gradient_accumulation_steps=8",
            "--always_save_checkpoint=False",
        ),
        cwd=".",
        setup=corpus_data.nanogpt,
        checkpoint="out/ckpt.pt",
        expect=(
            Expect(
                "rank0-only-loss-log",
                "confirmed",
                "lossf = loss.item() * gradient_accumulation_steps printed by master_process: rank 0's last "
                "micro-batch loss, never all-reduced",
            ),
            Expect("accum-no-sync-missing", "absent", "require_backward_grad_sync set before each forward"),
            Expect("no-sync-after-forward", "absent", "the flag is set before the forward, not after"),
            Expect("warmup-short", "absent", "warmup 40 = 2/(1-0.95); no spikes expected"),
            Expect(
                "sampler-missing",
                "absent",
                "random offsets from torch.manual_seed(1337 + rank): every rank reads different windows",
            ),
        ),
        notes="DDP mode forces device cuda:<local rank> (the shim maps it to cpu)",
    ),
    Script(
        id="lightning-trainer-ddp",
        repo=LIGHTNING[0],
        commit=LIGHTNING[1],
        path="examples/pytorch/basics/transformer.py",
        extract=("examples/pytorch/basics/transformer.py",),
        stack="Lightning Trainer(strategy=ddp), automatic optimisation (closure), accumulate 4, clip 0.25",
        cmd=("{py}", "transformer.py"),
        cwd="examples/pytorch/basics",
        shim="",
        env={
            **PL_DDP,
            "PL_TRAINER_MAX_STEPS": "24",
            "PL_TRAINER_ACCUMULATE_GRAD_BATCHES": "4",
            "PL_TRAINER_LIMIT_VAL_BATCHES": "2",
            "PL_TRAINER_LIMIT_TEST_BATCHES": "2",
            "PL_TRAINER_NUM_SANITY_VAL_STEPS": "0",
        },
        setup=corpus_data.wikitext2,
        checkpoint="checkpoints/*.ckpt",
        expect=(
            Expect(
                "no-sync-after-forward",
                "absent",
                "Lightning toggles sync through no_sync for the 3 non-final micro-batches; the last "
                "micro-batch's forward/backward runs inside optimizer.step(closure)",
            ),
            Expect(
                "accum-no-sync-missing", "absent", "Lightning's DDP strategy uses no_sync while accumulating"
            ),
            Expect(
                "set-epoch-missing", "absent", "Lightning injects a DistributedSampler and calls set_epoch"
            ),
            Expect("sampler-missing", "absent", "Lightning injects a DistributedSampler"),
            Expect("loss-unstable", "absent", "a small LM on Zipf text: the loss falls from ln(300)"),
            Expect(
                "rank0-only-loss-log",
                "confirmed",
                "training_step logs `self.log('train_loss', loss, prog_bar=True)` without sync_dist=True: the "
                "step value Lightning logs is each rank's own micro-batch loss, rank 0's is the one shown",
                after_run=(
                    "seen in the first probed run; verified in the code (no sync_dist at transformer.py's "
                    "self.log calls) and in Lightning's LightningModule.log, whose sync_dist defaults to False"
                ),
            ),
            Expect(
                "clip-saturated",
                "either",
                "gradient_clip_val=0.25 (norm) is the classic word-LM setting and likely clips every step: a "
                "literal truth the authors intend",
            ),
        ),
    ),
    Script(
        id="lightning-bug-report-ddp",
        repo=LIGHTNING[0],
        commit=LIGHTNING[1],
        path="examples/pytorch/bug_report/bug_report_model.py",
        extract=("examples/pytorch/bug_report/bug_report_model.py",),
        stack="Lightning Trainer(strategy=ddp), BoringModel, one step per epoch",
        cmd=("{py}", "bug_report_model.py"),
        cwd="examples/pytorch/bug_report",
        shim="",
        env={**PL_DDP},
        expect=(
            Expect("not-learning", "absent", "one optimizer step (limit_train_batches=1, max_epochs=1)"),
            Expect("sampler-missing", "absent", "Lightning injects a DistributedSampler"),
        ),
    ),
    Script(
        id="fabric-language-model",
        repo=LIGHTNING[0],
        commit=LIGHTNING[1],
        path="examples/fabric/language_model/train.py",
        extract=("examples/fabric/language_model/train.py",),
        stack="Lightning Fabric under `fabric run`, SGD, clip_gradients(clip_val=0.25) (by value)",
        cmd=(
            "fabric",
            "run",
            "--accelerator=cpu",
            "--devices=2",
            "--strategy=ddp",
            "train.py",
        ),
        cwd="examples/fabric/language_model",
        shim="",
        env={},
        setup=lambda cwd: corpus_data.wikitext2(cwd, blocks=4000 + 160),
        expect=(
            Expect(
                "set-epoch-missing",
                "absent",
                "Fabric's setup_dataloaders injects a DistributedSampler and sets the epoch",
            ),
            Expect("sampler-missing", "absent", "Fabric injects a DistributedSampler"),
            Expect(
                "rank0-only-loss-log",
                "confirmed",
                "`fabric.print(f'... loss {loss.item():.4f}')`: fabric.print prints on rank 0 only, and the "
                "loss is rank 0's own micro-batch loss, never reduced",
                after_run=(
                    "seen in the first probed run; verified in the code (train_epoch prints loss.item() with "
                    "fabric.print) and in Fabric.print, which prints only when local_rank == 0"
                ),
            ),
            Expect(
                "clip-saturated",
                "either",
                "clip_val=0.25 clips by value; whether most steps clip is a literal truth the authors intend",
            ),
        ),
        notes="max_epochs=20 is fixed in the script; the data is sized for 4 steps per epoch",
    ),
    Script(
        id="imagenet-dummy",
        repo=PT_EXAMPLES[0],
        commit=PT_EXAMPLES[1],
        path="imagenet/main.py",
        extract=("imagenet/main.py",),
        stack="torch.multiprocessing.spawn per node, 2 nodes, SGD momentum, StepLR, FakeData (torchvision)",
        cmd=(
            "{py}",
            "{nodes}",
            "2",
            "--",
            "{py}",
            "main.py",
            "--dummy",
            "-a",
            "resnet18",
            "-b",
            "4",
            "-j",
            "0",
            "--epochs",
            "2",
            "--print-freq",
            "4",
            "--lr",
            "0.01",
            "--dist-backend",
            "gloo",
            "--dist-url",
            "tcp://127.0.0.1:{port}",
            "--world-size",
            "2",
            "--rank",
            "{node}",
            "--multiprocessing-distributed",
        ),
        cwd="imagenet",
        shim="cpu,fakedata=32",
        venv="vision",
        expect=(
            Expect(
                "ddp-bypassed",
                "confirmed",
                "on CPU main_worker never wraps the model in DistributedDataParallel (the `if not use_accel` "
                "branch only prints 'using CPU'): the ranks train unsynchronised replicas",
            ),
            Expect("warmup-short", "absent", "SGD: the Adam warmup rule has no premise"),
            Expect(
                "set-epoch-missing",
                "absent",
                "train_sampler.set_epoch(epoch); the val sampler is shuffle=False",
            ),
            Expect("sampler-missing", "absent", "DistributedSampler on train and val"),
            Expect(
                "replica-divergence",
                "either",
                "follows from the missing DDP wrapper; the same cause as ddp-bypassed",
            ),
        ),
        notes="FakeData capped at 32 samples by the shim (the script has no size flag); 1 rank per node",
    ),
    Script(
        id="timm-train",
        repo="huggingface/pytorch-image-models",
        commit="aa4b5850c1543fa488abf260f18390eda46cf85d",
        path="train.py",
        extract=("train.py", "timm"),
        stack="timm train.py, torchrun, AdamW, cosine with warmup epochs, ImageFolder",
        cmd=(
            *TORCHRUN,
            "--nproc_per_node",
            "2",
            "train.py",
            "--data-dir",
            "data",
            "--model",
            "resnet10t",
            "--num-classes",
            "4",
            "--img-size",
            "32",
            "--input-size",
            "3",
            "32",
            "32",
            "-b",
            "8",
            "--epochs",
            "3",
            "--warmup-epochs",
            "1",
            "--opt",
            "adamw",
            "--lr",
            "1e-3",
            "--workers",
            "1",
            "--no-prefetcher",
            "--device",
            "cpu",
            "--log-interval",
            "1",
            "--output",
            "out",
        ),
        cwd=".",
        setup=corpus_data.image_folder,
        venv="vision",
        pythonpath=(".",),
        checkpoint="out/*/last.pth.tar",
        expect=(
            Expect("sampler-missing", "absent", "timm's create_loader uses a DistributedSampler"),
            Expect("set-epoch-missing", "absent", "train_one_epoch calls loader.sampler.set_epoch(epoch)"),
            Expect(
                "batchnorm-unsynced",
                "either",
                "resnet10t has BatchNorm and --sync-bn is off (a lint-time rule)",
            ),
        ),
    ),
    Script(
        id="hf-trainer-run-clm",
        repo=TRANSFORMERS[0],
        commit=TRANSFORMERS[1],
        path="examples/pytorch/language-modeling/run_clm.py",
        extract=("examples/pytorch/language-modeling/run_clm.py",),
        stack="HF Trainer, torchrun, tiny GPT-2 from a config, local tokenizer and text",
        cmd=(
            *TORCHRUN,
            "--nproc_per_node",
            "2",
            "run_clm.py",
            "--model_type",
            "gpt2",
            "--config_overrides",
            "n_layer=2,n_head=2,n_embd=32,n_positions=64,vocab_size=400",
            "--tokenizer_name",
            "tokenizer",
            "--train_file",
            "train.txt",
            "--do_train",
            "--block_size",
            "32",
            "--per_device_train_batch_size",
            "4",
            "--gradient_accumulation_steps",
            "2",
            "--max_steps",
            "30",
            "--logging_steps",
            "1",
            "--save_strategy",
            "no",
            "--report_to",
            "none",
            "--use_cpu",
            "--ddp_backend",
            "gloo",
            "--output_dir",
            "out",
        ),
        cwd="examples/pytorch/language-modeling",
        shim="",
        env=NO_DL_ENV,
        setup=corpus_data.hf_text,
        checkpoint="out/model.safetensors",
        expect=(
            Expect(
                "rank0-only-loss-log",
                "absent",
                "Trainer logs the loss all-reduced over ranks (nested_gather / _nested_gather mean), for the "
                "previous step",
            ),
            Expect("sampler-missing", "absent", "Trainer builds a DistributedSampler"),
            Expect("accum-no-sync-missing", "absent", "Trainer uses accelerate's no_sync while accumulating"),
            Expect(
                "warmup-short", "absent", "linear schedule without warmup, but no spike expected in 30 steps"
            ),
        ),
        notes="the transformers snapshot is larger than the mirror limit: the script comes from the file cache",
    ),
    Script(
        id="accelerate-run-clm-no-trainer",
        repo=TRANSFORMERS[0],
        commit="00661e38a9e1393472adae9ac71f777b74ccdcde",
        path="examples/pytorch/language-modeling/run_clm_no_trainer.py",
        extract=("examples/pytorch/language-modeling/run_clm_no_trainer.py",),
        stack="accelerate (Accelerator), `accelerate launch`, tiny GPT-2 from a config",
        cmd=(),
        cwd="examples/pytorch/language-modeling",
        expect=(),
        unavailable=(
            "the transformers snapshot (1.3 GB) is over the mirror limit, and the stored copies of this file "
            "(00661e38, 3c354ea2) import `transformers.AdamW`, removed before transformers 5.25 (installed)"
        ),
    ),
    Script(
        id="torchvision-detection-references",
        repo="pytorch/vision",
        commit="3ceb056d4c4a2d79ccdc65cbd2342b0e89a7ae47",
        path="references/detection/train.py",
        extract=("references/detection",),
        stack="detection loop (Faster R-CNN, list-of-dicts targets, GroupedBatchSampler), torchrun",
        cmd=(),
        cwd="references/detection",
        expect=(),
        unavailable="the pytorch/vision snapshot (1.4 GB) is over the 500 MiB mirror limit; it also needs COCO",
    ),
)

# The CI subset (tests/realscripts/test_fixtures.py): scripts written for this repository in the
# style of the public rows above, scored by the same `score`.
FIXTURES: tuple[Script, ...] = (
    Script(
        id="fixture-tutorial-snapshot-trainer",
        repo=LOCAL,
        commit="",
        path="tutorial_snapshot_trainer.py",
        extract=("tutorial_snapshot_trainer.py",),
        stack="DDP tutorial style: torchrun, peek before set_epoch, one-column cross_entropy",
        cmd=(
            *TORCHRUN,
            "--nproc_per_node",
            "2",
            "tutorial_snapshot_trainer.py",
            "4",
            "2",
            "--batch_size",
            "16",
        ),
        cwd=".",
        shim="",
        checkpoint="snapshot.pt",
        expect=(
            Expect(
                "not-learning", "confirmed", "one-column cross_entropy: loss 0 and gradients 0 on every step"
            ),
            Expect("set-epoch-missing", "absent", "set_epoch(epoch) after the peek"),
            Expect("sampler-missing", "absent", "DistributedSampler"),
        ),
    ),
    Script(
        id="fixture-gpt-accum-rank0-print",
        repo=LOCAL,
        commit="",
        path="gpt_accum_rank0_print.py",
        extract=("gpt_accum_rank0_print.py",),
        stack="nanoGPT style: require_backward_grad_sync, accumulation 4, AdamW, warmup 40, rank-0 print",
        cmd=(*TORCHRUN, "--nproc_per_node", "2", "gpt_accum_rank0_print.py"),
        cwd=".",
        shim="",
        expect=(
            Expect("rank0-only-loss-log", "confirmed", "master prints its own last micro-batch loss x 4"),
            Expect("accum-no-sync-missing", "absent", "require_backward_grad_sync set before each forward"),
            Expect("no-sync-after-forward", "absent", "set before the forward"),
            Expect("warmup-short", "absent", "warmup 40 = 2/(1-0.95)"),
        ),
    ),
    Script(
        id="fixture-spawn-train-val-samplers",
        repo=LOCAL,
        commit="",
        path="spawn_train_val_samplers.py",
        extract=("spawn_train_val_samplers.py",),
        stack="imagenet style: mp.spawn, shuffled train + shuffle=False val sampler, SGD momentum, no set_epoch",
        cmd=("{py}", "spawn_train_val_samplers.py", "--epochs", "4", "--port", "{port}"),
        cwd=".",
        shim="",
        expect=(
            Expect(
                "set-epoch-missing",
                "confirmed",
                "the train sampler shuffles and set_epoch is never called: the same order every epoch (the "
                "val sampler's shuffle=False must not decide the verdict)",
            ),
            Expect("warmup-short", "absent", "SGD: the Adam warmup rule has no premise"),
            Expect("sampler-missing", "absent", "DistributedSampler on both loaders"),
            Expect(
                "batchnorm-unsynced",
                "confirmed",
                "BatchNorm2d inside DDP without SyncBatchNorm: each rank normalises with its own batch statistics",
                after_run="seen in the first probed run: the fixture's model has this property (written in)",
            ),
        ),
    ),
)


# ---------------------------------------------------------------------------------------------
# source extraction


def _git_dir(mirrors: Path | None, repo: str) -> Path | None:
    if mirrors is None:
        return None
    for sub in ("repo", "repo/.git"):
        d = mirrors / repo.replace("/", "+") / sub
        if (d / "HEAD").is_file():
            return d
    return None


def extract(script: Script, dest: Path, mirrors: Path | None, cache: Path | None) -> str | None:
    """Extract the script's paths into dest; return None, or why it is not available."""
    if script.repo == LOCAL:
        for p in script.extract:
            shutil.copy2(FIXTURE_DIR / p, dest / p)
        return None
    git_dir = _git_dir(mirrors, script.repo)
    if git_dir is not None:
        archive = subprocess.run(
            ["git", f"--git-dir={git_dir}", "archive", script.commit, "--", *script.extract],
            capture_output=True,
        )
        if archive.returncode == 0:
            with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
                tar.extractall(dest, filter="data")
            return None
        why = f"commit {script.commit[:10]} or a path is not in the mirror {git_dir}"
    else:
        why = f"no mirror of {script.repo}"
    if cache is not None:
        root = cache / script.repo.replace("/", "+") / script.commit
        if all((root / p).exists() for p in script.extract):
            for p in script.extract:
                src, dst = root / p, dest / p
                dst.parent.mkdir(parents=True, exist_ok=True)
                if src.is_dir():
                    shutil.copytree(src, dst)
                else:
                    shutil.copy2(src, dst)
            return None
        why += f" and not in the cache {root}"
    return why


# ---------------------------------------------------------------------------------------------
# running


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Run:
    code: int | None  # None: timed out
    seconds: float
    stderr_tail: str
    probe_not_started: int = 0


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int, log: Path) -> Run:
    start = time.monotonic()
    with log.open("wb") as out:
        try:
            proc = subprocess.run(
                cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout
            )
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
    text = log.read_text(errors="replace")
    return Run(code, time.monotonic() - start, text[-3000:], text.count("probe not started"))


def _env(script: Script, python: str, root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    paths = [str(SHIM)] + [str(root / p) for p in script.pythonpath]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    # every row is seeded (shim part seed): an unseeded script is otherwise not comparable run to run
    env["DDP_REALSCRIPTS_SHIM"] = ",".join(p for p in (script.shim, f"seed={SEED}") if p)
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env["PATH"] = str(Path(python).parent) + os.pathsep + env.get("PATH", "")
    env.update(script.env)
    return env


def _command(script: Script, python: str) -> list[str]:
    port = str(_free_port())
    return [
        a.replace("{py}", python).replace("{nodes}", str(NODES)).replace("{port}", port) for a in script.cmd
    ]


def _prepare(
    script: Script, base: Path, mirrors: Path | None, cache: Path | None
) -> tuple[Path | None, str | None]:
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    why = extract(script, base, mirrors, cache)
    if why:
        return None, why
    cwd = base / script.cwd
    if script.setup is not None:
        script.setup(cwd)
    return cwd, None


def _probe_errors(run_dir: Path) -> list[str]:
    errors = []
    for f in sorted(run_dir.glob("ranks/*.jsonl")) + sorted(run_dir.glob("rank-*.jsonl")):
        try:
            with f.open(errors="replace") as fh:
                for line in fh:
                    if '"probe_error"' in line[:40]:
                        try:
                            rec = json.loads(line)
                        except ValueError:
                            continue
                        errors.append(f"{f.name}: {rec.get('instrument')}: {str(rec.get('error'))[:160]}")
        except OSError:
            continue
    return errors


@dataclass
class Result:
    id: str
    available: bool
    why_unavailable: str = ""
    bare: Run | None = None
    probed: Run | None = None
    report_code: int | None = None
    report_crash: str = ""
    probe_errors: list[str] = field(default_factory=list)
    findings: dict[str, str] = field(default_factory=dict)  # id -> status
    hits: list[str] = field(default_factory=list)
    not_measured: list[str] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    false_alarms: list[str] = field(default_factory=list)
    late_hits: list[str] = field(default_factory=list)  # hits of expectations added after the first run
    observations: list[str] = field(default_factory=list)  # unexpected confirmed findings of severity info
    ranks_present: int | None = None
    world_size: int | None = None
    optimizer_steps: int | None = None
    numerics: str = "—"  # bare vs probed checkpoint tensors


def _tensors(path: Path) -> dict[str, object]:
    """Every tensor in a checkpoint file, by its key path (dicts, lists, dataclass-like dicts)."""
    import torch

    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return dict(load_file(str(path)))
    out: dict[str, object] = {}

    def walk(obj: object, key: str) -> None:
        if isinstance(obj, torch.Tensor):
            out[key] = obj
        elif isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, f"{key}.{k}")
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                walk(v, f"{key}[{i}]")

    walk(torch.load(path, map_location="cpu", weights_only=False), "")
    return out


def compare_checkpoints(bare_cwd: Path, probed_cwd: Path, pattern: str) -> str:
    import torch

    bare = sorted(bare_cwd.glob(pattern))
    probed = sorted(probed_cwd.glob(pattern))
    # by file name: a directory may be named after its start time (timm, the FSDP2 example)
    if not bare or [p.name for p in bare] != [p.name for p in probed]:
        return f"not compared: {len(bare)} bare vs {len(probed)} probed files match {pattern}"
    total = differ = 0
    for b, p in zip(bare, probed):
        try:
            tb, tp = _tensors(b), _tensors(p)
        except Exception as error:  # noqa: BLE001 - a checkpoint we cannot read is reported, not fatal
            return f"not compared: {b.name}: {type(error).__name__}: {str(error)[:100]}"
        keys = set(tb) | set(tp)
        total += len(keys)
        differ += sum(
            1
            for k in keys
            if k not in tb or k not in tp or not torch.equal(tb[k], tp[k])  # type: ignore[arg-type]
        )
    return f"identical ({total} tensors)" if differ == 0 else f"**{differ} of {total} tensors differ**"


def score(
    script: Script, findings: dict[str, str], result: Result, severity: dict[str, str] | None = None
) -> None:
    """Compare reported statuses with the expectations (one definition, shared with the CI test).
    An unexpected confirmed finding of severity `info` (e.g. oscillation-within-noise: "the
    fluctuation is minibatch noise, not a bug") raises no alarm: it is listed as an observation."""
    aliases = set(NOT_LEARNING)

    def reported(fid: str) -> str | None:
        if fid == "not-learning":
            for alias in aliases:
                if alias in findings:
                    return findings[alias]
            return None
        return findings.get(fid)

    expected_ids: set[str] = set()
    for e in script.expect:
        ids = aliases if e.finding == "not-learning" else {e.finding}
        expected_ids |= ids if e.verdict in ("confirmed", "either") else set()
        status = reported(e.finding)
        if e.verdict == "confirmed":
            if status == "confirmed":
                result.hits.append(e.finding)
                if e.after_run:
                    result.late_hits.append(e.finding)
            elif status in ("not-measured", "inconclusive"):
                result.not_measured.append(f"{e.finding} ({status})")
            else:
                result.misses.append(f"{e.finding} ({status or 'absent'})")
    for fid, status in sorted(findings.items()):
        if status == "confirmed" and fid not in expected_ids:
            if (severity or {}).get(fid) == "info":
                result.observations.append(fid)
            else:
                result.false_alarms.append(fid)


def run_one(script: Script, args: argparse.Namespace) -> Result:
    python = args.vision_python if script.venv == "vision" else sys.executable
    result = Result(script.id, available=True)
    if script.unavailable:
        return Result(script.id, False, script.unavailable)
    if script.venv == "vision" and not (python and Path(python).exists()):
        return Result(
            script.id, False, "needs torchvision: pass --vision-python (a venv with torch + torchvision)"
        )
    work = args.out / script.id
    work.mkdir(parents=True, exist_ok=True)
    runs_file = work / "runs.json"
    if getattr(args, "rescore", False):
        # the runs are kept; only the report and the score are done again (after a merge that
        # changed the analysis, not the probe)
        try:
            saved = json.loads(runs_file.read_text())
        except (OSError, ValueError):
            return Result(script.id, False, f"--rescore: no runs saved in {work}")
        result.bare, result.probed = (Run(**saved[k]) if saved.get(k) else None for k in ("bare", "probed"))
        return _report_and_score(script, args, work, result)
    for kind in ("bare",) if args.bare_only else ("bare", "probed"):
        cwd, why = _prepare(script, work / f"{kind}-src", args.mirrors, args.cache)
        if cwd is None:
            return Result(script.id, False, why or "")
        root = work / f"{kind}-src"
        env = _env(script, python, root)
        cmd = _command(script, python)
        if kind == "probed":
            run_dir = work / "run"
            if run_dir.exists():
                shutil.rmtree(run_dir)
            cmd = [DDP_DOCTOR, "run", "--out", str(run_dir), "--", *cmd]
            env["PYTHONPATH"] = env["PYTHONPATH"] + os.pathsep + str(ROOT / "src")
        run = _run(cmd, cwd, env, script.timeout, work / f"{kind}.log")
        setattr(result, kind, run)
        print(f"  {script.id} {kind}: exit {run.code} in {run.seconds:.0f} s", flush=True)
    runs_file.write_text(
        json.dumps(
            {k: getattr(result, k).__dict__ if getattr(result, k) else None for k in ("bare", "probed")}
        )
    )
    if args.bare_only:
        return result
    return _report_and_score(script, args, work, result)


def _report_and_score(script: Script, args: argparse.Namespace, work: Path, result: Result) -> Result:
    if script.checkpoint:
        result.numerics = compare_checkpoints(
            work / "bare-src" / script.cwd, work / "probed-src" / script.cwd, script.checkpoint
        )
    run_dir = work / "run"
    report = subprocess.run(
        [DDP_DOCTOR, "report", str(run_dir), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    (work / "report.json").write_text(report.stdout)
    (work / "report.stderr").write_text(report.stderr)
    result.report_code = report.returncode
    if "Traceback" in report.stderr or report.returncode not in (0, 1):
        result.report_crash = (report.stderr.strip().splitlines() or [f"exit {report.returncode}"])[-1][:300]
    if getattr(args, "text_report", True):  # the text renderer crashed where JSON did not, once
        with (work / "report.txt").open("w") as out:
            text = subprocess.run(
                [DDP_DOCTOR, "report", str(run_dir)],
                stdout=out,
                stderr=subprocess.PIPE,
                text=True,
                timeout=600,
            )
        if not result.report_crash and ("Traceback" in text.stderr or text.returncode not in (0, 1)):
            lines = text.stderr.strip().splitlines() or [f"exit {text.returncode}"]
            result.report_crash = "text report: " + lines[-1][:300]
    result.probe_errors = _probe_errors(run_dir)
    if result.probed is not None and result.probed.probe_not_started:
        result.probe_errors.append(f"{result.probed.probe_not_started} 'probe not started' line(s)")
    try:
        data = json.loads(report.stdout)
    except ValueError:
        data = {}
    findings = {f["id"]: f["status"] for f in data.get("findings", []) if isinstance(f, dict)}
    severity = {f["id"]: f.get("severity", "") for f in data.get("findings", []) if isinstance(f, dict)}
    result.findings = findings
    run_info = data.get("run", {}) if isinstance(data, dict) else {}
    result.ranks_present = len(run_info.get("ranks_present", []) or [])
    result.world_size = run_info.get("world_size")
    result.optimizer_steps = run_info.get("optimizer_steps")
    score(script, findings, result, severity)
    return result


# ---------------------------------------------------------------------------------------------
# reporting


def _fmt_code(run: Run | None) -> str:
    if run is None:
        return "—"
    return "timeout" if run.code is None else str(run.code)


def markdown(results: list[Result]) -> str:
    lines = [
        "| script | bare | probed | equal | numerics | ranks | steps | probe errors | report crash | false alarms | misses | not measured | confirmed as expected | info observations |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if not r.available:
            lines.append(f"| `{r.id}` | not available: {r.why_unavailable} | | | | | | | | | | | | |")
            continue
        equal = "yes" if r.bare and r.probed and r.bare.code == r.probed.code else "**no**"
        ranks = f"{r.ranks_present}/{r.world_size}" if r.world_size else str(r.ranks_present)
        lines.append(
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                r.id,
                _fmt_code(r.bare),
                _fmt_code(r.probed),
                equal,
                r.numerics,
                ranks,
                r.optimizer_steps if r.optimizer_steps is not None else "—",
                len(r.probe_errors) or 0,
                r.report_crash or "no",
                ", ".join(f"`{f}`" for f in r.false_alarms) or "0",
                ", ".join(r.misses) or "0",
                ", ".join(r.not_measured) or "0",
                ", ".join(f"`{f}`" for f in r.hits) or "—",
                ", ".join(f"`{f}`" for f in r.observations) or "—",
            )
        )
    run = [r for r in results if r.available]
    totals = {
        "scripts": len(results),
        "run": len(run),
        "exit codes equal": sum(1 for r in run if r.bare and r.probed and r.bare.code == r.probed.code),
        "checkpoints identical": sum(1 for r in run if r.numerics.startswith("identical")),
        "checkpoints differing": sum(1 for r in run if "differ" in r.numerics),
        "report crashes": sum(1 for r in run if r.report_crash),
        "probe errors": sum(len(r.probe_errors) for r in run),
        "false alarms": sum(len(r.false_alarms) for r in run),
        "misses": sum(len(r.misses) for r in run),
        "not measured": sum(len(r.not_measured) for r in run),
        "confirmed as expected": sum(len(r.hits) for r in run),
        "of them expected only after the first run": sum(len(r.late_hits) for r in run),
        "info observations": sum(len(r.observations) for r in run),
    }
    lines.append("")
    lines.append("Totals: " + ", ".join(f"{k} {v}" for k, v in totals.items()) + ".")
    return "\n".join(lines) + "\n"


def expectations(rows: tuple[Script, ...]) -> str:
    """The rows and their expected verdicts as a markdown table (docs/real-scripts.md)."""
    lines = ["| script | source (pinned) | stack | expected | why |", "|---|---|---|---|---|"]
    for s in rows:
        source = f"`{s.repo}@{s.commit[:10]}` `{s.path}`" if s.repo != LOCAL else f"fixture `{s.path}`"
        if s.unavailable:
            lines.append(f"| `{s.id}` | {source} | {s.stack} | not runnable here | {s.unavailable} |")
            continue
        for i, e in enumerate(s.expect):
            head = (f"`{s.id}`", source, s.stack) if i == 0 else ("", "", "")
            why = e.why + (f" *(added after the first probed run: {e.after_run})*" if e.after_run else "")
            lines.append(f"| {head[0]} | {head[1]} | {head[2]} | `{e.finding}` {e.verdict} | {why} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--mirrors", type=Path, help="git mirrors: DIR/<owner>+<name>/repo")
    ap.add_argument("--cache", type=Path, help="file cache: DIR/<owner>+<name>/<commit>/<path>")
    ap.add_argument("--out", type=Path, default=Path("/tmp/realscripts"))
    ap.add_argument("--only", nargs="*", help="run these IDs only")
    ap.add_argument(
        "--vision-python", help="interpreter of a venv with torch + torchvision (+ ddp_doctor's deps)"
    )
    ap.add_argument("--fixtures", action="store_true", help="also run the CI fixtures (tests/realscripts)")
    ap.add_argument("--bare-only", action="store_true", help="run each script bare only (to check its shims)")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--markdown", type=Path, help="write the table here")
    ap.add_argument(
        "--rescore", action="store_true", help="keep the runs under --out; report and score them again"
    )
    ap.add_argument("--expectations", action="store_true", help="print the expected verdicts table and exit")
    args = ap.parse_args(argv)
    if args.expectations:
        print(expectations(SCRIPTS + FIXTURES), end="")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    rows = SCRIPTS + FIXTURES if args.fixtures else SCRIPTS
    chosen = [s for s in rows if not args.only or s.id in args.only]
    results = []
    for script in chosen:
        print(f"{script.id}: {script.repo}@{script.commit[:10]} {script.path}", flush=True)
        result = run_one(script, args)
        if not result.available:
            print(f"  not available: {result.why_unavailable}", flush=True)
        results.append(result)
    table = markdown(results)
    print(table)
    if args.markdown:
        args.markdown.write_text(table)
    if args.json:
        args.json.write_text(json.dumps([_as_json(r) for r in results], indent=2))
    return 0


def _as_json(r: Result) -> dict[str, object]:
    d = dict(r.__dict__)
    for kind in ("bare", "probed"):
        run = d[kind]
        d[kind] = None if run is None else {"code": run.code, "seconds": round(run.seconds, 1)}
    return d


if __name__ == "__main__":
    sys.exit(main())
