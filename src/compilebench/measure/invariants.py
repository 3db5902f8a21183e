"""What a run checks of itself where no test can reach (a real GPU): each check turns a silently wrong number into a
flag or an error on the result.

- The clock: the per-iteration CUDA event times of a pipelined loop add up to about the loop's host wall time
  (the GPU is busy from one event pair to the next). A sum far below it means the events timed something else
  (another stream, an idle GPU while the host queued work); a sum above it is impossible for one stream.
- CUDA graphs: inductor counts the graphs it decided not to record (`cudagraph_skips`) and logs why; a CUDA-graph
  variant that recorded none runs as plain `default` and must not be read as reduce-overhead.
- The device: a worker's GPU, by UUID, against the one whose lock the driver holds for it."""

from __future__ import annotations

import contextlib
import logging
import re
from dataclasses import dataclass, field

from compilebench.core.vocab import CLOCK

EXPECTED_GPU = "COMPILEBENCH_GPU_UUID"  # the GPU whose lock the driver holds for a worker (its UUID)
_CUDAGRAPHS_LOG = "torch._inductor.cudagraph_utils.__cudagraphs"  # where inductor says why it skipped


def clock_ratio(samples_ns: list[int], wall_ns: int) -> float | None:
    """The sum of the samples over the loop's wall time; None where there is no time to compare."""
    return sum(samples_ns) / wall_ns if wall_ns > 0 and samples_ns else None


def clock_suspect(ratio: float | None) -> bool:
    return CLOCK.raised_by(ratio)


@dataclass
class CudaGraphs:
    """What inductor did about CUDA graphs while a variant ran."""

    skips: int = 0
    reasons: list[str] = field(default_factory=list)
    recorded: int | None = None  # graphs cudagraph trees recorded on the device; None where it cannot be read

    @property
    def engaged(self) -> bool:
        return self.skips == 0 and self.recorded != 0

    def why_not(self) -> str:
        if self.reasons:
            return "; ".join(self.reasons)
        if self.skips:
            return f"inductor skipped {self.skips} graph(s) without a reason"
        return "inductor recorded no CUDA graph"


class _Reasons(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        first = record.getMessage().strip().splitlines()[0].strip()
        self.messages.append(first.removesuffix("Found from :").strip())  # where it was found follows on other lines


@contextlib.contextmanager
def watch_cudagraphs(device_index: int | None):
    """Around every call of a compiled variant: yields a CudaGraphs that holds, once the block ends, how many graphs
    inductor skipped, the reasons it logged, and how many graphs cudagraph trees recorded on the device."""
    from torch._dynamo.utils import counters

    seen = CudaGraphs()
    before = counters["inductor"]["cudagraph_skips"]
    handler = _Reasons()
    log = logging.getLogger(_CUDAGRAPHS_LOG)
    log.addHandler(handler)
    try:
        yield seen
    finally:
        log.removeHandler(handler)
        seen.skips = counters["inductor"]["cudagraph_skips"] - before
        seen.reasons = list(dict.fromkeys(handler.messages))
        seen.recorded = recorded_cudagraphs(device_index) if device_index is not None else None


def recorded_cudagraphs(device_index: int) -> int | None:
    """Graphs cudagraph trees has recorded on this device in this process (its graph ids are handed out in order)."""
    try:
        from torch._inductor import cudagraph_trees

        manager = cudagraph_trees.get_manager(device_index, create_if_none_exists=False)
        if manager is None:
            return 0
        m = re.fullmatch(r"count\((\d+)\)", repr(manager.graph_counter))
        return int(m.group(1)) if m else None
    except Exception:  # a torch whose cudagraph trees are laid out otherwise: unknown, never a failed case
        return None


class WrongDevice(RuntimeError):
    """The worker sees another GPU than the one locked for it: every number it measured would be another GPU's."""


def check_device(device: str, expected: str | None, seen: str | None) -> None:
    if expected and seen != expected:
        raise WrongDevice(f"the worker's {device} is GPU {seen or 'of unknown UUID'}, but the driver locked "
                          f"{expected} for it: CUDA_VISIBLE_DEVICES does not select the GPU the run meant")
