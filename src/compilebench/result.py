"""Result: what one case produced. Raw samples are kept; statistics are derived from them."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from dataclasses import dataclass, field

from compilebench import stats
from compilebench.spec import Case

# ok: measured. oom: ran out of (device or host) memory, as the guide's "OOM" cells. error: raised.
# invalid: measured, but something (a recompile in the timed loop) voids the number.
# mismatch: measured, but the compiled model's output is outside tolerance of eager's: kept, never recommended.
# timeout: killed after --timeout. crashed: the worker process died (signal or exit without a result).
STATUSES = ("ok", "oom", "error", "invalid", "mismatch", "timeout", "crashed")


@dataclass
class Result:
    case: Case
    status: str
    machine_id: str = ""
    label: str = ""  # the guide's "Task/Model" row label
    task: str = ""
    env: dict = field(default_factory=dict)
    isolation: str = "process"
    placement: str = ""  # what a Ray sweep asked for ("ray|H100|torch ...|transformers ..."): its resume identity
    compile_cache: str = ""  # the case's: cold, warm or a directory
    compile_cache_hits: int | None = None  # inductor FX-graph cache hits of the measured compile
    timing_policy: dict = field(default_factory=dict)
    clock: str | None = None
    samples_ms: list[float] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    first_call_s: float | None = None  # the first call alone; for a compiled model it holds the compilation
    compile_s: float | None = None  # dynamo's own compile timer, summed over every graph compiled
    warmup_iters: int | None = None
    iters_requested: int | None = None
    stopped_early: bool = False
    loop_wall_s: float | None = None
    peak_mem_bytes: int | None = None
    peak_mem_kind: str | None = None  # "cuda_max_allocated" or "host_max_rss"
    flops: int | None = None  # of one eager forward of the whole batch (torch.utils.flop_counter: matmuls, convs)
    graphs: int | None = None
    graph_breaks: int | None = None
    break_reasons: list[str] = field(default_factory=list)
    recompiles_in_timed_loop: int | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None  # max abs error over the reference's largest magnitude
    agreement: dict = field(default_factory=dict)  # task-aware checks: {"top1": 1.0}, {"class": 1.0, "box": 0.99}
    message: str | None = None  # one line: why it is not ok
    traceback: str | None = None
    phase: str | None = None  # the phase it was in when it failed
    result_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created_at: str = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).isoformat())

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {STATUSES}")
        self.compile_cache = self.compile_cache or self.case.compile_cache

    def set_samples(self, samples_ns: list[int]) -> None:
        self.samples_ms = [s / 1e6 for s in samples_ns]
        self.stats = stats.summarize(self.samples_ms)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["case_key"] = self.case.key()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Result:
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in d.items() if k in names}
        kwargs["case"] = Case.from_dict(d["case"])
        return cls(**kwargs)
