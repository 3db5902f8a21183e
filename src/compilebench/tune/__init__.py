"""`compilebench tune`: the fastest correct way to compile one model on this machine, found within a time budget.

The space: the compile settings that can change a number on this device (modes, freezing, dtype, channels-last,
fullgraph, dynamic shapes, regional compilation, an AOTInductor package for a vision model, CUDA-graph modes and
coordinate-descent tuning on a GPU); each is reported with the start it gives beside its speed. The search is successive
halving: every configuration gets one short repeat (one fresh process) in the first rung, the best third a
second, longer repeat in the next, the best two a third; each rung measures eager again beside them. A
configuration's compiler state is kept between rungs, so its later repeats compile warm. Configurations that
fail, disagree with eager or recompile while timed are dropped, with the reason. The budget is wall time: a
rung stops taking configurations when the next would not fit, and the final rung always runs.

A cold compile costs most of a measurement (about 22 of 28 s for ResNet-50 on 2 CPU cores), so a small budget
measures few configurations, and the best ones combine several changes whose worth depends on each other
(measured here for ResNet-50 on CPU: max-autotune alone makes plain compile slower, 0.70x eager against 0.83x,
but bfloat16 with channels-last faster, 2.29x against 1.96x). So the first rung climbs: after plain
torch.compile, it measures next the configuration that adds one change to the best so far (the likeliest
change first), and only where none is left, the rest in order of likelihood.

halving.py holds the search, its measuring injected (a fake with a fake clock in tests); as_code.py a configuration
as the code a user pastes (a pipeline's as diffusers compiles one); session.py measures it for real, through a
run's plan into a results file, with its pick served over several batch sizes where asked. Imports
run, measure, storage and core; never the report (it decides from speed-ups alone) nor the command line."""

from compilebench.tune.halving import (
    RUNGS,
    SHAPES_REPEATS,
    SHAPES_SHARE,
    SHAPES_TIMING,
    Config,
    Measure,
    Outcome,
    Tried,
    parse_budget,
    search,
    served_config,
    served_spec,
    space,
)
from compilebench.tune.as_code import shapes_code
from compilebench.tune.session import Tuning, tuning

__all__ = ["RUNGS", "SHAPES_REPEATS", "SHAPES_SHARE", "SHAPES_TIMING", "Config", "Measure", "Outcome", "Tried",
           "Tuning", "parse_budget", "search", "served_config", "served_spec", "shapes_code", "space", "tuning"]
