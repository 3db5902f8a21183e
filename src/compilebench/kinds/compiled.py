"""torch.compile, one kind per mode (`default`, `reduce-overhead`, `max-autotune`, `max-autotune-no-cudagraphs`),
each under the run's compile settings (backend, fullgraph, dynamic shapes, inductor options, scope:
core/variant.py), and `regional` (the default mode on each repeated block); measure/compiler.py compiles it in the
worker."""

from __future__ import annotations

from compilebench.core.variant import MODES, REGIONAL
from compilebench.kinds.base import Kind


class Compiled(Kind):
    title = "compile"

    def __init__(self, mode: str):
        self.name = mode


KINDS = tuple(Compiled(mode) for mode in (*MODES, REGIONAL))
