"""A HF Trainer run the way users write one: a tiny Llama from a config (no download), random tokens.

Usage: python hf_tiny_llama.py OUT_DIR [--steps N] [--callback] [--report-to tensorboard]
(under torchrun for several ranks: the Trainer picks up the process group itself).
"""

import argparse

import torch
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--callback", action="store_true")
parser.add_argument("--report-to", default="none")
args = parser.parse_args()


class RandomTokens(torch.utils.data.Dataset):
    def __len__(self):
        return 512

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, 128, (16,), generator=g)
        return {"input_ids": ids, "labels": ids.clone()}


torch.manual_seed(0)
config = LlamaConfig(
    vocab_size=128,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
)
model = LlamaForCausalLM(config)
training_args = TrainingArguments(
    output_dir=args.out,
    max_steps=args.steps,
    per_device_train_batch_size=4,
    learning_rate=3e-3,
    warmup_steps=5,
    max_grad_norm=1.0,
    logging_steps=1,
    save_strategy="no",
    report_to=[args.report_to] if args.report_to != "none" else [],
    use_cpu=True,
    dataloader_num_workers=0,
    disable_tqdm=True,
    seed=0,
)
callbacks = []
if args.callback:
    from ddp_doctor.integrations.hf import DdpDoctorCallback

    callbacks.append(DdpDoctorCallback(every=10))
trainer = Trainer(model=model, args=training_args, train_dataset=RandomTokens(), callbacks=callbacks)
trainer.train()
trainer.save_state()
