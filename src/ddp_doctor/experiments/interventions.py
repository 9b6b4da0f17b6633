"""Moved to :mod:`ddp_doctor.probe.interventions` (one definition per intervention, one module per
family); this re-export keeps old imports working while open branches are rebased."""

from ddp_doctor.probe.interventions import (
    ENV_VAR,
    INTERVENTIONS,
    InterventionError,
    parse_sets,
    parse_value,
    to_env,
)

SPECS = INTERVENTIONS

__all__ = ["ENV_VAR", "SPECS", "InterventionError", "parse_sets", "parse_value", "to_env"]
