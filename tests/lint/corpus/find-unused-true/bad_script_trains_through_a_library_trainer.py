# An entry script with no backward of its own still trains when it hands the model to a trainer
# (`trainer.train()`): the flag costs a graph traversal every step there.
from transformers import Trainer, TrainingArguments


def main(model, dataset):
    args = TrainingArguments(output_dir="out", ddp_find_unused_parameters=True)  # expect: find-unused-true
    trainer = Trainer(model=model, args=args, train_dataset=dataset)
    trainer.train()


if __name__ == "__main__":
    main(None, None)
