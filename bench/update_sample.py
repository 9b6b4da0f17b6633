"""What does the default level's update/parameter sample cost? Timed in one process, side by side.

On the reference trainer's model (default: `small` preset) with AdamW, one training step
(forward, backward, `optimizer.step()`) is timed with and without the sample of
probe/instruments/update_sample.py (`select` + the copy before the step + the norms after it),
interleaved so load drift on a shared machine hits both alike. The sample runs on one step in
SAMPLE_EVERY, so its share of the run is (sampled − plain) / (SAMPLE_EVERY × plain). Also times
the final replica checksum (once per run).

    python bench/update_sample.py [--preset small] [--repeats 20]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from ddp_doctor.probe.instruments import params, replicas, update_sample
from ddp_doctor.probe.options import ProbeOptions
from ddp_doctor.probe.state import PROBE
from ddp_doctor.trainer.config import TrainConfig
from ddp_doctor.trainer.model import build_model


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="small")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--micro-batch", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=128)
    args = parser.parse_args()
    torch.manual_seed(0)
    cfg = TrainConfig(preset=args.preset, micro_batch=args.micro_batch, seq_len=args.seq_len)
    model = build_model(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    PROBE.options = ProbeOptions(run_dir=None, level="basic", every=50)  # type: ignore[arg-type]
    PROBE.models.clear()
    params.watch(model, model)
    vocab = model.config.vocab_size
    x = torch.randint(0, vocab, (args.micro_batch, args.seq_len))

    def step(sample: bool) -> float:
        t0 = time.perf_counter()
        out = model(input_ids=x, labels=x)
        out.loss.backward()
        if sample:
            update_sample.before_step.__wrapped__(opt, 0)
        opt.step()
        if sample:
            update_sample.after_step.__wrapped__(0)
        opt.zero_grad()
        return time.perf_counter() - t0

    emitted = []
    PROBE.emit = lambda rec, **kw: emitted.append(rec)  # type: ignore[method-assign]
    step(False), step(True)  # warm-up
    plain, sampled = [], []
    for _ in range(args.repeats):
        plain.append(step(False))
        sampled.append(step(True))
    hooks = []  # the sample alone: copy before + norms after (no optimizer step in between)
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        update_sample.before_step.__wrapped__(opt, 0)
        update_sample.after_step.__wrapped__(0)
        hooks.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    replicas._checksum(0, opt, final=True)
    checksum = time.perf_counter() - t0
    p, s = statistics.median(plain), statistics.median(sampled)
    n_params = sum(q.numel() for q in model.parameters())
    updates = [r for r in emitted if r.get("kind") == "update"]
    tensors = len(updates[-1]["tensors"]) if updates else 0
    print(f"{args.preset} preset, {n_params / 1e6:.1f}M parameters, {tensors} tensors sampled")
    print(f"step {p * 1e3:.1f} ms, step with sample {s * 1e3:.1f} ms (+{(s - p) * 1e3:.2f} ms)")
    print(
        f"share of the run at one sample per {update_sample.SAMPLE_EVERY} steps: "
        f"{(s - p) / (update_sample.SAMPLE_EVERY * p):+.2%} (one micro-step per step; accumulation divides it)"
    )
    h = statistics.median(hooks)
    print(
        f"the sample alone: {h * 1e3:.2f} ms = {h / (update_sample.SAMPLE_EVERY * p):.3%} of the run "
        f"at one sample per {update_sample.SAMPLE_EVERY} steps"
    )
    print(f"final replica checksum (once per run): {checksum * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
