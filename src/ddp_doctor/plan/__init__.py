"""`ddp-doctor plan`: will a model fit, at what micro-batch, with which strategy — before renting GPUs.

Pure arithmetic on the model shape and a GPU table: no torch, no transformers. Modules:
`model` (shape from a preset or a HF config.json), `hardware` (gpus.json), `memory` (model states
per strategy, ZeRO paper), `activations` (saved tensors of a HF LLaMA layer), `throughput`
(FLOPs, step time, communication volume), `advice` (warnings and catalog hypotheses), `planner`
(puts them together) and `render` (text, table, JSON).
"""
