"""How a process starts, as a repeat records it and as a case sums it up over its repeats: until its first answer
(Start), an AOTInductor package built or loaded (AotPackage, AotStart), the mega-cache's artifacts saved or loaded
(MegaCache, MegaStart)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from compilebench.core.record import Record, column


def _median(values: list):
    return statistics.median(values) if values else None


@dataclass(kw_only=True)
class Start(Record):
    """What one process waited for its first answer, once it was running (measure/recording.record_start)."""

    build_s: float | None = None  # the model's build (an AOTInductor package holds its weights: a replica builds none)
    load_s: float | None = None  # loading the mega-cache's artifacts, or the package
    first_call_s: float | None = None  # the first call, which holds any compile

    @property
    def parts(self) -> dict[str, float]:
        return {k: v for k, v in (("build_s", self.build_s), ("load_s", self.load_s),
                                  ("first_call_s", self.first_call_s)) if v is not None}


@dataclass(kw_only=True)
class AotPackage(Record):
    """aot-inductor in one process: the package's export and packaging (by the repeat that built it) and its load."""

    export_s: float | None = None
    package_s: float | None = None  # AOTInductor's compile, then the package written
    package_bytes: int | None = None
    built: bool = False  # this process built the package (the first repeat that found none)
    load_s: float | None = None


@dataclass(kw_only=True)
class AotStart(Record):
    """aot-inductor over a case's repeats: the build (export and package seconds, the package's size) and the median
    load and start (load + first call), from the repeats that only loaded it (fresh processes, as a replica) where
    there are any (`start_from` says which)."""

    export_s: float | None = column(csv="aot_export_s")
    package_s: float | None = column(csv="aot_package_s")
    package_bytes: int | None = column(csv="aot_package_bytes")
    load_s: float | None = column(csv="aot_load_s")
    first_call_s: float | None = None
    start_s: float | None = column(csv="aot_start_s")
    start_from: str | None = None

    @classmethod
    def of(cls, reps: list) -> AotStart:
        done = [r for r in reps if r.aot_inductor and r.first_call_s is not None]
        if not done:
            return cls()
        built = next((r.aot_inductor for r in done if r.aot_inductor.built), AotPackage())
        loaded = [r for r in done if not r.aot_inductor.built] or done
        return cls(export_s=built.export_s, package_s=built.package_s,
                   package_bytes=done[0].aot_inductor.package_bytes,
                   load_s=_median([r.aot_inductor.load_s for r in loaded]),
                   first_call_s=_median([r.first_call_s for r in loaded]),
                   start_s=_median([r.aot_inductor.load_s + r.first_call_s for r in loaded]),
                   start_from="fresh processes that loaded it" if loaded is not done or not built
                   else "the process that built it")


@dataclass(kw_only=True)
class MegaCache(Record):
    """--compile-cache mega in one process: the artifacts it saved (a cold repeat) or loaded (a later one)."""

    saved_bytes: int | None = None
    save_s: float | None = None
    loaded_bytes: int | None = None
    load_s: float | None = None
    artifacts: dict = field(default_factory=dict)  # what they held, by kind: {"inductor": 1, "aot_autograd": 1}
    missed: int | None = None  # graphs it compiled after loading them, which they did not hold
    problem: str | None = None  # saving them failed: why


@dataclass(kw_only=True)
class MegaStart(Record):
    """--compile-cache mega over a case's repeats: the artifacts' size and, over the repeats that loaded them, the
    median load seconds, compile seconds left, first call and start (load + first call: what a new replica waits)."""

    bytes: int | None = column(csv="mega_cache_bytes")
    repeats: int | None = None
    load_s: float | None = column(csv="mega_load_s")
    compile_s: float | None = column(csv="mega_compile_s")
    first_call_s: float | None = column(csv="mega_first_call_s")
    start_s: float | None = column(csv="mega_start_s")
    missed: int | None = column(csv="mega_missed_graphs")
    problem: str | None = None

    @classmethod
    def of(cls, reps: list) -> MegaStart:
        saved = next((r.mega_cache for r in reps if r.mega_cache.saved_bytes is not None), None)
        loads = [r for r in reps if r.mega_cache.loaded_bytes is not None and r.first_call_s is not None]
        out = cls(bytes=saved.saved_bytes if saved else None,
                  problem=next((r.mega_cache.problem for r in reps if r.mega_cache.problem), None))
        if loads:
            out.bytes, out.repeats = loads[0].mega_cache.loaded_bytes, len(loads)
            out.load_s = _median([r.mega_cache.load_s for r in loads])
            out.compile_s = _median([r.compile_s for r in loads if r.compile_s is not None])
            out.first_call_s = _median([r.first_call_s for r in loads])
            out.start_s = _median([r.mega_cache.load_s + r.first_call_s for r in loads])
            out.missed = max(r.mega_cache.missed or 0 for r in loads)
        return out
