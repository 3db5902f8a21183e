"""What else used the machine while a timed loop ran: the logic on fake counters and a fake NVML (the test
machines have no GPU), and one real busy machine."""

import os
import subprocess
import sys
import types

import pytest

from compilebench.core.conditions import Conditions
from compilebench.measure import conditions
from compilebench.measure.conditions import CpuReading, Nvml, Watch


def test_other_processes_share_of_the_cpu_is_counted_without_the_workers_own_time():
    before = CpuReading(total=1000, busy=100, own=50, loadavg=0.2)
    after = CpuReading(total=1200, busy=250, own=100, loadavg=1.1)  # 150 busy ticks, 50 of them the worker's
    c = Conditions(**conditions.cpu_conditions(before, after))
    assert c.other_cpu_share == pytest.approx(100 / 200) and c.loadavg_1m == 1.1
    assert conditions.flags(c) == ["busy"]
    quiet = Conditions(**conditions.cpu_conditions(before, CpuReading(total=1200, busy=153, own=100, loadavg=0.2)))
    assert quiet.other_cpu_share == pytest.approx(3 / 200) and conditions.flags(quiet) == []


def test_the_workers_own_helpers_are_counted_apart_from_the_other_processes():
    """Issue 62: its descendants (inductor's compile pool, woken at every compile of a graph on a GPU) run on
    the housekeeping cores, outside the ticks the share reads: their count before and after the loop, and the CPU s
    they used over it, at least (one that ended took its seconds with it: never below none)."""
    before = CpuReading(total=1000, busy=100, own=50, loadavg=0.2, helpers=(1, 2.5))
    c = Conditions(**conditions.cpu_conditions(before, CpuReading(1200, 150, 100, 0.2, helpers=(5, 4.0))))
    assert c.helper_processes == [1, 5] and c.helper_cpu_s == pytest.approx(1.5) and c.other_cpu_share == 0
    ended = Conditions(**conditions.cpu_conditions(before, CpuReading(1200, 150, 100, 0.2, helpers=(0, 0.0))))
    assert ended.helper_processes == [1, 0] and ended.helper_cpu_s == 0.0
    unread = Conditions(**conditions.cpu_conditions(CpuReading(1000, 100, 50, 0.2), CpuReading(1200, 150, 100, 0.2)))
    assert unread.helper_processes is None and unread.helper_cpu_s is None


def test_helpers_are_read_from_each_descendants_stat(tmp_path):
    """cores.descendants_cpu_s on a /proc of four processes: 10's child 11 and grandchild 12 are its own, 13 is
    another's; user plus system time, in the kernel's clock ticks."""
    from compilebench.measure import cores

    tick = os.sysconf("SC_CLK_TCK")
    for pid, parent, user, system in ((10, 1, 500, 500), (11, 10, 3 * tick, tick), (12, 11, tick // 2, 0),
                                      (13, 1, 9 * tick, 0)):
        (tmp_path / str(pid)).mkdir()
        rest = ["S", str(parent)] + ["0"] * 9 + [str(user), str(system)] + ["0"] * 30
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (py (compile) worker) " + " ".join(rest))
    (tmp_path / "self").mkdir()  # not a process: left out
    assert cores.descendants_cpu_s(10, str(tmp_path)) == (2, pytest.approx(4.5, abs=1 / tick))
    assert cores.descendants_cpu_s(13, str(tmp_path)) == (0, 0.0)


def test_a_child_working_between_two_real_readings_is_the_workers_helper():
    """The real /proc, as a worker reads it around its loop: a child that works between the two readings (after a
    handshake, not a sleep)."""
    work = "import sys; sys.stdin.readline(); x = 0\nfor i in range(3_000_000): x += i\nprint('done', flush=True)"
    child = subprocess.Popen([sys.executable, "-c", work], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        before = conditions.read_cpu()
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline() == "done\n"
        after = conditions.read_cpu()
    finally:
        child.kill()
        child.wait()
    c = Conditions(**conditions.cpu_conditions(before, after))
    assert c.helper_processes[0] >= 1 and c.helper_processes[1] >= 1 and c.helper_cpu_s >= 0.05, c


def test_a_loop_too_short_to_judge_gets_no_share_and_no_flag():
    c = Conditions(**conditions.cpu_conditions(CpuReading(1000, 0, 0, None), CpuReading(1010, 10, 0, None)))
    assert c.other_cpu_share is None and conditions.flags(c) == []


class FakePynvml(types.SimpleNamespace):
    """The few pynvml calls compilebench makes, answering from a script of readings."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 0, 1, 0
    NVML_PERF_POLICY_POWER, NVML_PERF_POLICY_THERMAL = 0, 1

    def __init__(self, readings):
        super().__init__()
        self.readings, self.i = readings, -1

    def next(self):
        self.i += 1

    def r(self):
        return self.readings[self.i]

    def nvmlDeviceGetClockInfo(self, h, which):
        return self.r()["clocks"][which]

    def nvmlDeviceGetTemperature(self, h, which):
        return self.r()["temp"]

    def nvmlDeviceGetPowerUsage(self, h):
        return self.r()["power_mw"]

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 700_000

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self.r()["reasons"]

    def nvmlDeviceGetViolationStatus(self, h, policy):
        return types.SimpleNamespace(violationTime=self.r()["violation"][policy])

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [types.SimpleNamespace(pid=p) for p in self.r()["pids"]]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h):
        raise RuntimeError("not supported")  # a query this GPU does not answer: skipped

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if "energy_mj" not in self.r():
            raise RuntimeError("not supported")
        return self.r()["energy_mj"]

    def nvmlDeviceGetPersistenceMode(self, h):
        return 1

    def nvmlDeviceGetApplicationsClock(self, h, which):
        return {0: 1755, 1: 2619}[which]

    def nvmlDeviceGetMaxClockInfo(self, h, which):
        return {0: 1980, 1: 2619}[which]

    def nvmlDeviceGetEccMode(self, h):
        return (1, 1)

    def nvmlDeviceGetMigMode(self, h):
        raise RuntimeError("not supported")  # a board without MIG


def reading(reasons=0, pids=(4242,), violation=(0, 0), sm=1980):
    return {"clocks": {0: sm, 1: 2619}, "temp": 61, "power_mw": 350_000, "reasons": reasons, "pids": list(pids),
            "violation": dict(enumerate(violation))}


def watch_over(readings, own_pid=4242):
    fake = FakePynvml(readings)
    nvml = Nvml(fake, handle="gpu0", own_pid=own_pid)

    def gpu():
        fake.next()
        return nvml.read()

    w = Watch(cpu=lambda: None, gpu=gpu)
    w.start()
    return w.stop()


def test_a_quiet_gpu_is_recorded_and_not_flagged():
    c = watch_over([reading(), reading(reasons=0x1)])  # 0x1: idle, not a slowdown
    assert c.gpu_sm_clock_mhz == [1980, 1980] and c.gpu_temperature_c == [61, 61]
    assert c.gpu_power_w == [350.0, 350.0] and c.gpu_power_limit_w == 700.0
    assert c.gpu_throttle_reasons == [] and c.gpu_other_processes == []  # only this worker is on it
    assert conditions.flags(c) == []


def test_a_power_cap_is_recorded_but_only_heat_and_hardware_slowdowns_throttle():
    # An H100 at full power sits at its software power cap: recorded, not a reason to distrust the number.
    c = watch_over([reading(), reading(reasons=0x4, sm=1410)])
    assert c.gpu_throttle_reasons == ["power cap"] and conditions.flags(c) == []
    c = watch_over([reading(violation=(0, 10)), reading(violation=(5_000_000, 10))])
    assert c.gpu_throttle_reasons == ["power violation"] and conditions.flags(c) == []
    for bit, name in ((0x8, "hardware slowdown"), (0x20, "thermal (software)"), (0x40, "thermal (hardware)"),
                      (0x80, "power brake")):
        c = watch_over([reading(), reading(reasons=bit | 0x4)])
        assert name in c.gpu_throttle_reasons and conditions.flags(c) == ["throttled"], name
    # a slowdown between the two readings leaves its trace in the violation counters
    c = watch_over([reading(violation=(0, 10)), reading(violation=(0, 5_000_000))])
    assert c.gpu_throttle_reasons == ["thermal violation"] and conditions.flags(c) == ["throttled"]


def test_energy_comes_from_the_total_energy_counter_around_the_loop():
    first, second = reading(), reading()
    first["energy_mj"], second["energy_mj"] = 1_000_000, 1_090_500
    assert watch_over([first, second]).gpu_energy_j == pytest.approx(90.5)
    assert watch_over([reading(), reading()]).gpu_energy_j is None  # a GPU without the counter: unknown


def test_board_settings_are_read_for_the_environment():
    fake = FakePynvml([reading()])
    facts = Nvml(fake, handle="gpu0", own_pid=1).facts()
    assert facts == {"gpu_persistence_mode": True, "gpu_application_clocks_mhz": [1755, 2619],
                     "gpu_max_clocks_mhz": [1980, 2619], "gpu_ecc": 1, "gpu_mig": None}


STAT = """cpu  400 0 200 1400 0 0 0 0 0 0
cpu0 100 0 50 350 0 0 0 0 0 0
cpu1 100 0 50 350 0 0 0 0 0 0
cpu2 200 0 100 700 0 0 0 0 0 0
intr 12345
"""


def test_busy_counts_only_the_cpus_the_worker_may_use():
    # Under --gpus each slot keeps to its own cores: the other slots' compile threads on cpu2 are not its neighbours.
    assert conditions.cpu_ticks(STAT, {0, 1}) == (1000, 300)
    assert conditions.cpu_ticks(STAT, {2}) == (1000, 300)
    assert conditions.cpu_ticks(STAT, {0, 1, 2}) == (2000, 600)


def test_another_process_on_the_gpu_makes_the_result_busy():
    c = watch_over([reading(pids=(4242, 777)), reading(pids=(4242, 777))])
    assert c.gpu_other_processes == [777] and conditions.flags(c) == ["busy"]
    # in a container NVML reports host pids: this worker is then one of those it cannot recognise
    c = watch_over([reading(pids=(98765,)), reading(pids=(98765,))], own_pid=12)
    assert c.gpu_other_processes == []


def test_a_machine_burning_a_core_flags_the_result_busy():
    from compilebench.core.case import Case
    from compilebench.core.job import TimingPolicy
    from compilebench.core.variant import Variant
    from compilebench.measure.worker import run_case

    burner = subprocess.Popen([sys.executable, "-c", "import os\nos.write(1, b'burning\\n')\nwhile True: pass"],
                              stdout=subprocess.PIPE)
    try:
        assert burner.stdout.readline() == b"burning\n"  # the handshake: it is spinning now
        r = run_case(Case("fault-slow", 1, Variant("eager"), device="cpu"), TimingPolicy(iters=5, warmup=0, min_iters=1),
                     isolation="inline")
    finally:
        burner.kill()
        burner.wait()
    rep = r.repeats[0]
    assert rep.conditions.other_cpu_share > 0.3, rep.conditions  # one of this machine's cores, or more
    assert r.flags == ["busy"] and rep.flags == ["busy"]


def _powercap(root, packages: dict[str, int], subdomain_uj: int = 10**12, max_range_uj: int | None = None):
    """A sysfs powercap tree: package domains with their counters (microjoules), and a subdomain that must not be
    counted on top of its package."""
    for name, uj in packages.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "energy_uj").write_text(f"{uj}\n")
        if max_range_uj is not None:
            (root / name / "max_energy_range_uj").write_text(f"{max_range_uj}\n")
    (root / "intel-rapl:0:0").mkdir(exist_ok=True)
    (root / "intel-rapl:0:0" / "energy_uj").write_text(f"{subdomain_uj}\n")
    return str(root)


def test_cpu_energy_is_the_packages_counters_around_the_loop(tmp_path):
    root = _powercap(tmp_path, {"intel-rapl:0": 5_000_000, "intel-rapl:1": 7_000_000})
    before = conditions.read_rapl(root)
    _powercap(tmp_path, {"intel-rapl:0": 5_600_000, "intel-rapl:1": 7_400_000}, subdomain_uj=3 * 10**12)
    got = conditions.energy_conditions(before, conditions.read_rapl(root))
    assert got == {"cpu_energy_j": pytest.approx(1.0), "cpu_energy_domains": ["intel-rapl:0", "intel-rapl:1"]}


def test_a_counter_that_wrapped_is_unwrapped_by_its_range_and_refused_without_one(tmp_path):
    root = _powercap(tmp_path, {"intel-rapl:0": 262_000_000}, max_range_uj=262_143_328)
    before = conditions.read_rapl(root)
    _powercap(tmp_path, {"intel-rapl:0": 856_672}, max_range_uj=262_143_328)
    assert conditions.energy_conditions(before, conditions.read_rapl(root))["cpu_energy_j"] == pytest.approx(1.0)
    before.ranges.clear()
    got = conditions.energy_conditions(before, conditions.read_rapl(root))
    assert got["cpu_energy_j"] is None and "went back" in got["cpu_energy_absent"]


def test_missing_or_unreadable_counters_say_why_and_give_no_figure(tmp_path):
    got = conditions.energy_conditions(*[conditions.read_rapl(str(tmp_path / "none"))] * 2)
    assert got["cpu_energy_j"] is None and got["cpu_energy_absent"].startswith(f"no {tmp_path / 'none'} on this machine")
    root = _powercap(tmp_path / "pc", {"intel-rapl:0": 1})

    def root_only(path, *args):  # as Linux 5.10+ has it for a user (the tests run as root: modes would not stop them)
        raise PermissionError(13, "Permission denied", path)

    reading = conditions.read_rapl(root, opener=root_only)
    assert reading.joules == {} and "not readable by this user" in reading.why_not
    assert conditions.energy_conditions(reading, reading)["cpu_energy_j"] is None


def test_the_cpu_energy_per_call_reaches_the_repeat_and_the_result():
    from compilebench.core.case import Case
    from compilebench.core.repeat import Repeat
    from compilebench.core.result import Result
    from compilebench.core.variant import Variant
    from compilebench.measure import recording

    readings = iter([conditions.EnergyReading({"intel-rapl:0": 100.0}), conditions.EnergyReading({"intel-rapl:0": 103.0})])
    watch = Watch(cpu=lambda: None, energy=lambda: next(readings))
    watch.start()
    measured = types.SimpleNamespace(iters_requested=3, min_iters=1, stopped_early=False, loop_wall_ns=3e6,
                                     loop_started_at=1.0, loop_ended_at=1.003, conditions=watch.stop())
    rep = Repeat()
    recording.record_loop(rep, measured, [1_000_000] * 3, alone=True)
    assert rep.cpu_energy_per_call_j == pytest.approx(1.0) and rep.energy_per_call_j is None
    shared = Repeat()
    recording.record_loop(shared, measured, [1_000_000] * 3, alone=False)  # variants sharing the loop: not theirs alone
    assert shared.cpu_energy_per_call_j is None
    result = Result(Case("resnet-50", 1, Variant()), [rep])
    result.derive()
    assert result.cpu_energy_per_call_j == pytest.approx(1.0)


def test_the_cpu_probe_is_the_fastest_of_its_runs_and_is_read_before_and_after_the_loop():
    ticks = iter([0, 900_000, 1_000_000, 1_700_000, 2_000_000, 2_800_000, 3_000_000, 3_650_000, 4_000_000, 4_900_000])
    assert conditions.cpu_probe_us(lambda: next(ticks)) == pytest.approx(650.0)  # runs of 900, 700, 800, 650, 900 us
    probes = iter([612.0, 455.0])
    watch = Watch(cpu=lambda: None, energy=None, probe=lambda: next(probes))
    watch.start()
    assert watch.stop().cpu_probe_us == [612.0, 455.0]
    assert conditions.NoWatch().stop().cpu_probe_us is None
    real = Watch(cpu=lambda: None, energy=None)  # the probe itself: a few milliseconds of pure Python
    real.start()
    before, after = real.stop().cpu_probe_us
    assert 0 < before < 1e5 and 0 < after < 1e5
