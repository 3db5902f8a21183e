"""The records of an engine's preparation, the same for every engine (kinds/ holds the engines themselves): what
one process did to make the engine ready (EnginePrepared: export, conversion, session or engine build, cold or from
the engine's cache; the precision the engine really computed in), and what a case's repeats add up to
(EngineStart). A new engine adds no field: what it alone records is kept as the record's extra keys."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from compilebench.core.record import Record, column


@dataclass(kw_only=True)
class EnginePrepared(Record):
    """An engine made ready in one process: by the repeat that found nothing prepared, the export (and, for
    OpenVINO, the conversion) and a cold build; by a later one, a build from what the first left (ONNX Runtime's
    optimized model, OpenVINO's cache: `cache` warm)."""

    engine: str | None = None
    version: str | None = None
    export_s: float | None = None  # torch.onnx.export / torch.export and ov.convert_model: by the repeat that built it
    build_s: float | None = None  # the session (ORT), compile_model (OpenVINO), the engine (TensorRT)
    cache: str | None = None  # "cold": built from the exported model; "warm": from the engine's cache or optimized file
    built: bool = False  # this process exported the model (the first repeat that found none)
    model_bytes: int | None = None  # the exported model as written (ONNX file, OpenVINO IR)
    precision: str | None = None  # what the engine computed in, as it says (OpenVINO's inference precision read back)
    device: str | None = None  # where the engine ran: ORT's execution provider, OpenVINO's device
    threads: int | None = None  # the threads it was given: the run's torch threads

    @property
    def seconds(self) -> float | None:
        """The preparation this process paid: export (where it exported) and build."""
        if self.build_s is None:
            return None
        return (self.export_s or 0.0) + self.build_s


def _median(values: list):
    return statistics.median(values) if values else None


@dataclass(kw_only=True)
class EngineStart(Record):
    """An engine over a case's repeats: its preparation cold (export and a first build: the repeat that built it)
    and warm (the median build of the repeats that found the engine's cache), the precision it computed in and its
    version, the exported model's size."""

    engine: str | None = None
    cold_s: float | None = column(csv="engine_cold_s")
    export_s: float | None = column(csv="engine_export_s")
    warm_s: float | None = column(csv="engine_warm_s")
    precision: str | None = column(csv="engine_precision")
    device: str | None = column(csv="engine_device")
    version: str | None = column(csv="engine_version")
    model_bytes: int | None = column(csv="engine_model_bytes")

    @classmethod
    def of(cls, reps: list) -> EngineStart:
        done = [r.engine for r in reps if r.engine]
        if not done:
            return cls()
        cold = next((e for e in done if e.cache == "cold" and e.seconds is not None), None)
        warm = [e.build_s for e in done if e.cache == "warm" and e.build_s is not None]
        return cls(engine=done[0].engine, cold_s=cold.seconds if cold else None,
                   export_s=next((e.export_s for e in done if e.built), None), warm_s=_median(warm),
                   precision=" | ".join(dict.fromkeys(e.precision for e in done if e.precision)) or None,
                   device=done[0].device, version=done[0].version,
                   model_bytes=next((e.model_bytes for e in done if e.model_bytes), None))
