"""Launcher-side code of `ddp-doctor run`: the command, the child process with the probe injected
(inject/sitecustomize.py), the run-directory claim, DeepSpeed's environment, the exits torchrun saw.

Runs in the `ddp-doctor run` process and (inject/, exits) in torchrun's; imports the probe's
options and placement, never the other way round.
"""
