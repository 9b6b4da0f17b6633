"""Moved to :mod:`ddp_doctor.presets` (the trainer and `plan` both need them); this re-export keeps
old imports working while open branches are rebased. New code imports ``ddp_doctor.presets``."""

from ddp_doctor.presets import CPU_PRESETS, PRESETS, ModelPreset, get_preset

__all__ = ["CPU_PRESETS", "PRESETS", "ModelPreset", "get_preset"]
