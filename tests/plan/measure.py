"""Measure on CPU what the planner predicts: model-state bytes and activation bytes.

Activations are measured as the bytes of every tensor storage created during the forward that
is still alive when the forward returns (the caller keeps only the loss), plus the input ids:
exactly what autograd (or a checkpoint) holds for backward. A TorchDispatchMode sees every
storage an op creates; `StorageWeakRef` tells whether it is still alive. Parameters are excluded.
"""

from __future__ import annotations

import contextlib

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from ddp_doctor.presets import ModelPreset


class _StorageTracker(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.created: dict[int, tuple[StorageWeakRef, int]] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                self.created[storage.data_ptr()] = (StorageWeakRef(storage), storage.nbytes())
        return out

    def alive_bytes(self, exclude: set[int]) -> int:
        return sum(n for ptr, (ref, n) in self.created.items() if ptr not in exclude and not ref.expired())


def build_llama(preset: ModelPreset, mode: str, checkpointing: bool) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**preset.hf_config_kwargs(), attn_implementation="sdpa"))
    if mode == "half":
        model = model.to(torch.bfloat16)
    if checkpointing:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    return model.train()


def measured_activation_bytes(
    model: torch.nn.Module, vocab: int, micro_batch: int, seq_len: int, mode: str
) -> int:
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    ids = torch.randint(0, vocab, (micro_batch, seq_len))
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if mode == "autocast" else contextlib.nullcontext()
    tracker = _StorageTracker()
    with tracker, autocast:
        loss = model(input_ids=ids, labels=ids).loss
    stored = tracker.alive_bytes(params) + ids.untyped_storage().nbytes()
    loss.backward()  # frees the graph; also proves the forward was a real training forward
    return stored
