"""The conditions a timed loop ran in: how much CPU other processes used meanwhile (the operating system's
counters, this worker's own time taken out), the load average, the CPU packages' energy where the kernel exposes
it (RAPL under /sys/class/powercap; why not, where it does not), and on CUDA the GPU's clocks, temperature, power,
throttle reasons and other processes (NVML, from the optional `nvidia-ml-py`).

Everything is read once before and once after the loop, never during it: nothing of compilebench runs beside a
timed loop. Counters are read through small reader functions, so tests drive the logic with fake ones."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Callable

from compilebench.core.conditions import Conditions
from compilebench.core.vocab import BUSY, THROTTLED
from compilebench.measure import cores

# Too few clock ticks (10 ms each) between the two readings to tell a share from rounding: no verdict.
MIN_TICKS = 20
# The CPU probe: the fastest of PROBE_TIMES runs of PROBE_STEPS additions in pure Python (0.35-0.43 ms each on this
# project's VM): the host side's speed on the loop's core, read beside the other conditions.
PROBE_STEPS, PROBE_TIMES = 20_000, 5

# NVML clock-event (throttle) reasons that slow the clocks below what was asked for.
THROTTLE_REASONS = {
    0x4: "power cap",
    0x8: "hardware slowdown",
    0x20: "thermal (software)",
    0x40: "thermal (hardware)",
    0x80: "power brake",
}
# The reasons that make a result `throttled`. The software power cap is left out (recorded, not flagged): an H100
# sets it in normal full-power running, so it says the GPU was busy, not that the number is off.
THROTTLING = ("hardware slowdown", "thermal (software)", "thermal (hardware)", "power brake", "thermal violation")


@dataclass
class CpuReading:
    total: int  # jiffies over every CPU, idle included
    busy: int  # jiffies not idle (steal included: time the hypervisor gave to someone else)
    own: int  # jiffies this process used, every thread
    loadavg: float | None  # 1-minute load average
    core: int | None = None  # the CPU this thread last ran on
    helpers: tuple[int, float] | None = None  # this process's descendants and their CPU s so far (cores.py)


def cpu_ticks(stat: str, cpus: set[int]) -> tuple[int, int]:
    """(total, busy) jiffies of these CPUs, from /proc/stat's per-CPU lines."""
    total = busy = 0
    for line in stat.splitlines():
        name, _, rest = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            fields = [int(x) for x in rest.split()]
            idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
            t = sum(fields[:8])  # guest time is already inside user time
            total, busy = total + t, busy + t - idle
    return total, busy


def read_cpu() -> CpuReading | None:
    """/proc/stat's counters of the CPUs this process may run on (under --gpus, its slot's own: the other slots'
    compile threads are theirs), /proc/self/stat's own and its descendants' (Linux); None elsewhere."""
    try:
        with open("/proc/stat") as f:
            stat = f.read()
        with open("/proc/self/stat") as f:
            own = f.read().rsplit(")", 1)[1].split()
        total, busy = cpu_ticks(stat, os.sched_getaffinity(0))
    except (OSError, ValueError, AttributeError):
        return None
    loadavg = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return CpuReading(total=total, busy=busy, own=int(own[11]) + int(own[12]), loadavg=loadavg,
                      core=int(own[36]) if len(own) > 36 else None, helpers=cores.descendants_cpu_s())


def cpu_conditions(before: CpuReading | None, after: CpuReading | None) -> dict:
    """Other processes' share of the machine's CPU time between two readings."""
    if before is None or after is None:
        return {}
    ticks = after.total - before.total
    others = (after.busy - before.busy) - (after.own - before.own)
    out = {"loadavg_1m": after.loadavg, "loadavg_1m_before": before.loadavg, "cpu_ticks": ticks,
           "cpu_core": [before.core, after.core]}
    out["other_cpu_share"] = max(0, others) / ticks if ticks >= MIN_TICKS else None
    if before.helpers and after.helpers:  # one that ended meanwhile took its seconds with it: at least this
        out["helper_processes"] = [before.helpers[0], after.helpers[0]]
        out["helper_cpu_s"] = round(max(0.0, after.helpers[1] - before.helpers[1]), 3)
    return out


def cpu_probe_us(clock: Callable[[], int] = time.perf_counter_ns) -> float:
    """The CPU probe (PROBE_STEPS, PROBE_TIMES above), in microseconds."""
    best = None
    for _ in range(PROBE_TIMES):
        t0 = clock()
        x = 0
        for i in range(PROBE_STEPS):
            x += i
        took = clock() - t0
        best = took if best is None else min(best, took)
    return best / 1e3


@dataclass
class GpuReading:
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    temperature_c: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    throttle: int = 0  # bitmask of NVML clock-event reasons
    power_violation_ns: int | None = None  # cumulative time clocks were held down by power
    thermal_violation_ns: int | None = None
    energy_mj: int | None = None  # the GPU's total energy counter since the driver loaded, millijoules
    other_processes: list[int] = field(default_factory=list)


class Nvml:
    """The few NVML calls compilebench makes, for the GPU the worker uses. Created only in a worker, where the
    device already has a CUDA context; NVML itself creates none."""

    error: str | None = None  # why the last open() found no GPU, for the environment (never silent)

    def __init__(self, pynvml, handle, own_pid: int, mig: str | None = None):
        self._n, self._h, self._pid = pynvml, handle, own_pid
        self.mig = mig  # a MIG instance's UUID: then the handle is its board's, whose readings it shares

    @classmethod
    def open(cls, uuid: str | None, index: int) -> Nvml | None:
        try:
            import pynvml
        except ImportError:
            cls.error = "pynvml is not installed (pip install compilebench[nvidia])"
            return None
        return cls.open_with(pynvml, uuid, index)

    @classmethod
    def open_with(cls, pynvml, uuid: str | None, index: int) -> Nvml | None:
        """A MIG instance (its UUID starts with MIG-) answers few queries (no clocks, power or energy): those are
        read from the board that holds it, and the environment says they are the whole board's."""
        try:
            pynvml.nvmlInit()
            handle = (pynvml.nvmlDeviceGetHandleByUUID(uuid) if uuid else pynvml.nvmlDeviceGetHandleByIndex(index))
            mig = None
            if uuid and uuid.startswith("MIG-"):
                handle, mig = pynvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(handle), uuid
        except Exception as exc:  # no driver, no permission: conditions stay unknown (and said), never a failed case
            cls.error = f"NVML did not open {uuid or f'GPU {index}'}: {type(exc).__name__}: {exc}"[:200]
            return None
        cls.error = None
        return cls(pynvml, handle, os.getpid(), mig)

    def sm_clock(self) -> int | None:
        """The SM clock now (MHz): what a warm-up waits on, one query."""
        return _try(lambda: self._n.nvmlDeviceGetClockInfo(self._h, self._n.NVML_CLOCK_SM))

    def read(self) -> GpuReading:
        n, h = self._n, self._h
        r = GpuReading()
        r.sm_clock_mhz = _try(lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM))
        r.mem_clock_mhz = _try(lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM))
        r.temperature_c = _try(lambda: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU))
        r.power_w = _try(lambda: n.nvmlDeviceGetPowerUsage(h) / 1000)
        r.power_limit_w = _try(lambda: n.nvmlDeviceGetEnforcedPowerLimit(h) / 1000)
        reasons = getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None) or n.nvmlDeviceGetCurrentClocksThrottleReasons
        r.throttle = _try(lambda: int(reasons(h))) or 0
        r.power_violation_ns = _try(lambda: int(n.nvmlDeviceGetViolationStatus(h, n.NVML_PERF_POLICY_POWER).violationTime))
        r.thermal_violation_ns = _try(lambda: int(n.nvmlDeviceGetViolationStatus(h, n.NVML_PERF_POLICY_THERMAL).violationTime))
        r.energy_mj = _try(lambda: int(n.nvmlDeviceGetTotalEnergyConsumption(h)))
        pids = set()
        for call in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            pids |= {p.pid for p in _try(lambda: getattr(n, call)(h)) or []}
        # In a container NVML reports host pids: this worker may not find its own, and is then one of them.
        if self._pid in pids:
            pids.discard(self._pid)
        elif pids:
            pids.pop()
        r.other_processes = sorted(pids)
        return r

    def driver_version(self) -> str | None:
        """The NVIDIA driver's version, as nvidia-smi prints it."""
        got = _try(self._n.nvmlSystemGetDriverVersion)
        return got.decode() if isinstance(got, bytes) else got  # older pynvml answers bytes

    def facts(self) -> dict:
        """What the board is set to, for the environment: what a number depends on beside the code."""
        n, h = self._n, self._h

        def pair(call):  # NVML answers (current, pending)
            got = _try(call)
            return got[0] if isinstance(got, (tuple, list)) else got

        return {
            **({"gpu_mig_instance": self.mig, "gpu_readings": "the whole board's, shared with its other MIG instances"}
               if self.mig else {}),
            "gpu_persistence_mode": _try(lambda: bool(n.nvmlDeviceGetPersistenceMode(h))),
            "gpu_application_clocks_mhz": [_try(lambda: n.nvmlDeviceGetApplicationsClock(h, n.NVML_CLOCK_SM)),
                                           _try(lambda: n.nvmlDeviceGetApplicationsClock(h, n.NVML_CLOCK_MEM))],
            "gpu_max_clocks_mhz": [_try(lambda: n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM)),
                                   _try(lambda: n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_MEM))],
            "gpu_ecc": pair(lambda: n.nvmlDeviceGetEccMode(h)),
            "gpu_mig": pair(lambda: n.nvmlDeviceGetMigMode(h)),
        }


def _try(fn):
    try:
        return fn()
    except Exception:  # a query this GPU or driver does not support
        return None


def gpu_conditions(before: GpuReading | None, after: GpuReading | None) -> dict:
    if before is None or after is None:
        return {}
    reasons = sorted({name for bit, name in THROTTLE_REASONS.items() if (before.throttle | after.throttle) & bit})
    for kind, b, a in (("power", before.power_violation_ns, after.power_violation_ns),
                       ("thermal", before.thermal_violation_ns, after.thermal_violation_ns)):
        if a is not None and b is not None and a > b and f"{kind} violation" not in reasons:
            reasons.append(f"{kind} violation")
    energy = (after.energy_mj - before.energy_mj) / 1000 if None not in (before.energy_mj, after.energy_mj) else None
    return {
        "gpu_energy_j": energy,
        "gpu_sm_clock_mhz": [before.sm_clock_mhz, after.sm_clock_mhz],
        "gpu_mem_clock_mhz": [before.mem_clock_mhz, after.mem_clock_mhz],
        "gpu_temperature_c": [before.temperature_c, after.temperature_c],
        "gpu_power_w": [before.power_w, after.power_w],
        "gpu_power_limit_w": after.power_limit_w,
        "gpu_throttle_reasons": reasons,
        "gpu_other_processes": sorted(set(before.other_processes) | set(after.other_processes)),
    }


def flags(conditions: Conditions) -> list[str]:
    """`busy` and `throttled`, from what a Watch recorded."""
    out = []
    if BUSY.raised_by(conditions.other_cpu_share) or conditions.gpu_other_processes:
        out.append(BUSY.name)
    if set(conditions.gpu_throttle_reasons) & set(THROTTLING):
        out.append(THROTTLED.name)
    return out


POWERCAP = "/sys/class/powercap"
PACKAGE = re.compile(r"intel-rapl:\d+")  # a package domain; its subdomains (intel-rapl:0:0, cores, dram) are inside it


@dataclass
class EnergyReading:
    """The RAPL package counters (joules, by domain) and each one's wrap-around range; or why there are none."""

    joules: dict[str, float] = field(default_factory=dict)
    ranges: dict[str, float] = field(default_factory=dict)
    why_not: str | None = None


def read_rapl(root: str = POWERCAP, opener=open) -> EnergyReading:
    """Every CPU package's energy counter (AMD's too: Linux shows them as intel-rapl)."""
    try:
        domains = sorted(n for n in os.listdir(root) if PACKAGE.fullmatch(n))
    except OSError:
        return EnergyReading(why_not=f"no {root} on this machine (the kernel exposes no RAPL energy counters)")
    if not domains:
        return EnergyReading(why_not=f"no RAPL package domain under {root}")
    reading = EnergyReading()
    for d in domains:
        try:
            with opener(os.path.join(root, d, "energy_uj")) as f:
                reading.joules[d] = int(f.read()) / 1e6
        except PermissionError:
            return EnergyReading(why_not=f"{root}/{d}/energy_uj is not readable by this user (root only since Linux 5.10)")
        except (OSError, ValueError) as exc:
            return EnergyReading(why_not=f"{root}/{d}/energy_uj cannot be read ({exc})")
        try:
            with opener(os.path.join(root, d, "max_energy_range_uj")) as f:
                reading.ranges[d] = int(f.read()) / 1e6
        except (OSError, ValueError):
            pass  # no range: a counter that wrapped is refused below rather than guessed
    return reading


def energy_conditions(before: EnergyReading | None, after: EnergyReading | None) -> dict:
    """The CPU packages' joules between two readings (a counter that wrapped once is unwrapped by its range), or
    why they are absent."""
    if before is None or after is None:
        return {}
    why = before.why_not or after.why_not
    if why is None and set(before.joules) != set(after.joules):
        why = "the RAPL domains changed during the loop"
    total = 0.0
    for d in before.joules if why is None else ():
        delta = after.joules[d] - before.joules[d]
        if delta < 0 and before.ranges.get(d):
            delta += before.ranges[d]
        if delta < 0:
            why = f"{d}'s counter went back with no range to unwrap it by"
            break
        total += delta
    if why:
        return {"cpu_energy_j": None, "cpu_energy_absent": why}
    return {"cpu_energy_j": total, "cpu_energy_domains": sorted(before.joules)}


class Watch:
    """Read before and after a timed loop: watch.start(); loop; conditions = watch.stop()."""

    def __init__(self, cpu: Callable[[], CpuReading | None] = read_cpu, gpu: Callable[[], GpuReading] | None = None,
                 energy: Callable[[], EnergyReading] | None = read_rapl,
                 sm_clock: Callable[[], int | None] | None = None, probe: Callable[[], float] | None = cpu_probe_us):
        self._cpu, self._gpu, self._energy, self._probe = cpu, gpu, energy, probe
        self.sm_clock = sm_clock  # the GPU's SM clock now, for a warm-up to wait on (None: not read)
        self._before: tuple = (None, None, None, None, None)

    def start(self) -> None:
        probe = self._probe() if self._probe else None  # first: the readings after it are the loop's neighbours
        self._before = (self._cpu(), self._gpu() if self._gpu else None, self._energy() if self._energy else None,
                        time.time(), probe)

    def stop(self) -> Conditions:
        cpu_before, gpu_before, energy_before, t0, probe_before = self._before
        cpu_after, gpu_after = self._cpu(), (self._gpu() if self._gpu else None)
        energy_after = self._energy() if self._energy else None
        window_s = time.time() - t0
        probe = [probe_before, self._probe()] if self._probe else None
        return Conditions(window_s=window_s, **cpu_conditions(cpu_before, cpu_after), cpu_probe_us=probe,
                          **gpu_conditions(gpu_before, gpu_after), **energy_conditions(energy_before, energy_after))


class NoWatch(Watch):
    """Records nothing (fake-clock tests)."""

    def __init__(self):
        super().__init__(cpu=lambda: None, energy=None, probe=None)

    def stop(self) -> Conditions:
        return Conditions()
