# zoo: expect=none
# HF Trainer fine-tuning a tiny Llama built from a config (no download); Trainer does the logging.
# Its logged "loss" is gathered over ranks and averaged over logging_steps: nothing to report.
import tempfile

import torch
from torch.utils.data import Dataset
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments


class ToyLM(Dataset):
    def __init__(self, n=96, seq=24, vocab=128):
        g = torch.Generator().manual_seed(7)
        self.data = torch.randint(0, vocab, (n, seq), generator=g)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        ids = self.data[idx]
        return {"input_ids": ids, "labels": ids.clone()}


def build():
    cfg = LlamaConfig(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg)


if __name__ == "__main__":
    out = tempfile.mkdtemp(prefix="zoo-hf-")
    targs = TrainingArguments(
        output_dir=out,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=2,
        num_train_epochs=1,
        max_steps=12,
        learning_rate=5e-4,
        warmup_steps=2,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        ddp_backend="gloo",
        disable_tqdm=True,
        seed=0,
    )
    trainer = Trainer(model=build(), args=targs, train_dataset=ToyLM())
    trainer.train()
