"""What else used the machine around one timed loop (measure/conditions.py reads it): the CPU's other processes
and load, the GPU's clocks, temperature, power, throttling and other processes, and the energy counters."""

from __future__ import annotations

from dataclasses import dataclass, field

from compilebench.core.record import Record


@dataclass(kw_only=True)
class Conditions(Record):
    """Readings before and after one timed loop; a pair [before, after] where a reading is a level."""

    window_s: float | None = None  # from the first reading to the last
    loadavg_1m: float | None = None
    loadavg_1m_before: float | None = None
    cpu_ticks: int | None = None  # CPU time that passed on the cores the worker could run on
    other_cpu_share: float | None = None  # other processes' share of it (None: too few ticks to tell)
    # the worker's own descendants, before and after the loop, and the CPU s they used over it (at least: one that
    # ended took its seconds with it). They run on the housekeeping cores, outside cpu_ticks: inductor's compile
    # pool, which compile_fx wakes at every compile of a graph on a GPU, one loaded from its cache too (3 s on an
    # H200 where a cold one took 12); the worker waits for it to finish starting before its warm-up (below)
    helper_processes: list | None = None
    helper_cpu_s: float | None = None
    # inductor's compile pool, where the process woke one: how it stood when the warm-up began (core/vocab's
    # POOL_READY, POOL_STARTING, POOL_FAILED) and the seconds the worker waited for it (measure/compile_pool.py)
    compile_pool: str | None = None
    compile_pool_wait_s: float | None = None
    # the core the loop's thread ran on, before and after it (Linux: /proc/self/stat's processor): on an H200 a
    # process's state (the same case at 5 ms or 9 ms, process by process) was what no warm-up cured, and where it
    # ran is what the next GPU run tells it apart by
    cpu_core: list | None = None
    # a fixed stretch of pure Python on that core, before and after the loop (microseconds, the fastest of a few):
    # how fast the host side ran then (batch 1 on a GPU is launch-bound); the H200's slow first minute of
    # 2026-11-28 showed in no GPU reading
    cpu_probe_us: list | None = None
    gpu_energy_j: float | None = None  # NVML's energy counter over the loop
    gpu_sm_clock_mhz: list | None = None
    gpu_mem_clock_mhz: list | None = None
    gpu_temperature_c: list | None = None
    gpu_power_w: list | None = None
    gpu_power_limit_w: float | None = None
    gpu_throttle_reasons: list[str] = field(default_factory=list)  # NVML's clock-event reasons, in words
    gpu_other_processes: list[int] = field(default_factory=list)  # pids of other processes on the GPU
    cpu_energy_j: float | None = None  # the CPU packages' RAPL counters over the loop
    cpu_energy_domains: list[str] = field(default_factory=list)
    cpu_energy_absent: str | None = None  # why the CPU's energy is not known
