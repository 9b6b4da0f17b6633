from transformers import Trainer, TrainingArguments


def main(model, dataset):
    args = TrainingArguments(output_dir="out", gradient_accumulation_steps=8, lr_scheduler_type="cosine")
    Trainer(model=model, args=args, train_dataset=dataset).train()
