"""HF Trainer on a tiny LlamaForCausalLM built from a config (no download), DDP over gloo."""

import sys

import torch
from torch.utils.data import Dataset
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

SEQ = 16
N_SAMPLES = 16


class RandomTokens(Dataset):
    def __init__(self) -> None:
        gen = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, 256, (N_SAMPLES, SEQ), generator=gen)

    def __len__(self) -> int:
        return N_SAMPLES

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.ids[i].clone()}


torch.manual_seed(0)
config = LlamaConfig(
    vocab_size=256,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=4,
    max_position_embeddings=64,
)
model = LlamaForCausalLM(config)
args = TrainingArguments(
    output_dir=sys.argv[1],
    per_device_train_batch_size=2,
    gradient_accumulation_steps=2,
    max_steps=3,
    learning_rate=1e-3,
    warmup_steps=1,
    lr_scheduler_type="linear",
    use_cpu=True,
    ddp_backend="gloo",
    report_to=[],
    save_strategy="no",
    logging_steps=1,
    dataloader_num_workers=0,
    seed=0,
    disable_tqdm=True,
)
Trainer(model=model, args=args, train_dataset=RandomTokens()).train()
