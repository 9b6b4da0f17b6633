"""The reference LLaMA DDP trainer: the forum setup at tiny scale, done right, with fault switches.

Modules: config (TrainConfig + flags), data (Markov documents, entropy floor), model (LLaMA +
token-sum loss), loop (build / train_step / train), faults (the pitfall switches), launch (torchrun
command + progress), summary, command (`ddp-doctor train`; `ddp-doctor demo` is ddp_doctor.demo).
See docs/trainer.md.
Importing this package imports nothing heavy; torch and transformers load with `loop`/`model`.
"""
