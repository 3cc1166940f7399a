"""Tuning: search space, timing protocol, tuner, TunedConfig (versioned JSON) and load_tuned."""

from blest.tuning.artifact import load_artifact, save_artifact
from blest.tuning.config import CONFIG_VERSION, TunedConfig, default_outputs
from blest.tuning.loader import load_prepared, load_tuned
from blest.tuning.space import Candidate
from blest.tuning.tuner import TuneOutcome, tune, write_tuned

__all__ = [
    "CONFIG_VERSION",
    "Candidate",
    "TuneOutcome",
    "TunedConfig",
    "default_outputs",
    "load_artifact",
    "load_prepared",
    "load_tuned",
    "save_artifact",
    "tune",
    "write_tuned",
]
