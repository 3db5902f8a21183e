"""Where cases run: several devices at once (a fake device pool), CPU shares, the worker's confinement, and the
options that choose an executor."""

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import fakeresults as fr
import pytest

from compilebench.core.case import Case
from compilebench.core.environment import Environment
from compilebench.core.errors import UserError
from compilebench.core.job import TimingPolicy
from compilebench.core.repeat import Repeat
from compilebench.core.spec import RunSpec
from compilebench.core.variant import Variant
from compilebench.measure import cores, invariants
from compilebench.run import devices, dispatch, locks, placement
from compilebench.run.executors import Cancelled, ProcessExecutor

POLICY = TimingPolicy(iters=5, warmup=2, min_iters=1)
TARGET = dispatch.Target("here", "machine", Environment())


def units(n):
    return [dispatch.Unit(TARGET, (Case(f"model-{i}", 1, Variant("eager")),)) for i in range(n)]


def open_unit(unit):
    return dispatch.Work(fr.job(list(unit.cases), POLICY))


def ok(cases):
    return [Repeat() for c in cases]


class Recorder:
    """Progress that remembers what each slot ran, and from which thread deliveries came."""

    def __init__(self):
        self.events, self.lock = [], threading.Lock()

    def started(self, slot, unit):
        with self.lock:
            self.events.append(("started", slot, unit.cases[0].model))

    def phase(self, slot, phase):
        pass

    def finished(self, slot):
        with self.lock:
            self.events.append(("finished", slot))

    def note(self, message):
        with self.lock:
            self.events.append(("note", message))


class FakeDevices:
    """Devices that notice being held twice: run_group takes the device, works a little, gives it back."""

    def __init__(self, names):
        self.held, self.violations, self.intervals = set(), [], []
        self.lock = threading.Lock()
        self.slots = [dispatch.Slot(n, f"fake:{n}", self._runner(n)) for n in names]

    def _runner(self, name):
        def run_group(job, env, on_phase):
            cases = job.cases
            with self.lock:
                if name in self.held:
                    self.violations.append(name)
                self.held.add(name)
            assert all(c.device == f"fake:{name}" for c in cases)  # each case goes to its slot's device
            start = time.monotonic()
            on_phase("timed loop")
            time.sleep(random.uniform(0.01, 0.05))
            with self.lock:
                self.held.discard(name)
                self.intervals.append((name, start, time.monotonic()))
            return ok(cases)
        return run_group


def test_a_pool_runs_one_case_per_device_at_a_time_and_every_device_at_once():
    devices = FakeDevices(["0", "1", "2"])
    delivered, threads = [], set()

    def deliver(unit, job, repeats):
        threads.add(threading.current_thread().name)
        delivered.append(unit.cases[0].model)

    dispatch.LocalPool(devices.slots).run(units(24), open_unit, Recorder(), deliver)
    assert sorted(delivered) == sorted(f"model-{i}" for i in range(24))  # each unit once
    assert devices.violations == []
    assert threads == {"MainThread"}  # only the caller's thread ever sees results (it alone writes the store)
    used = {name for name, _, _ in devices.intervals}
    assert used == {"0", "1", "2"}
    overlapping = any(a != b and s1 < e2 and s2 < e1
                      for a, s1, e1 in devices.intervals for b, s2, e2 in devices.intervals)
    assert overlapping  # devices really did run at the same time


def test_one_slot_runs_in_the_callers_thread_in_order():
    devices = FakeDevices(["0"])
    order = []
    dispatch.LocalPool(devices.slots).run(units(5), open_unit, Recorder(),
                                          lambda u, j, r: order.append((threading.current_thread().name, u.cases[0].model)))
    assert order == [("MainThread", f"model-{i}") for i in range(5)]


def test_a_unit_that_does_not_open_is_not_run():
    devices = FakeDevices(["0", "1"])
    delivered = []
    skip_odd = lambda u: None if int(u.cases[0].model.split("-")[1]) % 2 else open_unit(u)  # noqa: E731
    dispatch.LocalPool(devices.slots).run(units(6), skip_odd, Recorder(), lambda u, j, r: delivered.append(u.cases[0].model))
    assert sorted(delivered) == ["model-0", "model-2", "model-4"]


def test_an_interrupted_pool_cancels_running_cases_and_keeps_those_that_finished():
    release, stuck_running = threading.Event(), threading.Event()
    cancelled = []

    def quick(job, env, on_phase):
        stuck_running.wait(30)  # so that the interruption finds a case running on the other slot
        return ok(job.cases)

    taken_by_stuck = []

    def stuck(job, env, on_phase):
        taken_by_stuck.extend(c.model for c in job.cases)
        stuck_running.set()
        release.wait(30)
        raise Cancelled

    def cancel():
        cancelled.append(True)
        release.set()

    slots = [dispatch.Slot("quick", "cpu", quick), dispatch.Slot("stuck", "cpu", stuck, cancel)]
    delivered = []

    def deliver(unit, job, repeats):
        delivered.append(unit.cases[0].model)
        if len(delivered) == 1:
            raise KeyboardInterrupt  # Ctrl-C while the first result is being stored

    with pytest.raises(KeyboardInterrupt):
        dispatch.LocalPool(slots).run(units(4), open_unit, Recorder(), deliver)
    assert cancelled == [True]
    # whatever the quick slot finished is delivered (none twice); the stuck slot's case never is
    assert len(delivered) == len(set(delivered)) >= 1
    assert taken_by_stuck and not set(taken_by_stuck) & set(delivered)
    assert not any(t.name.startswith("slot ") and t.is_alive() for t in threading.enumerate())


def test_a_bug_in_a_slot_is_raised_in_the_caller_with_its_traceback():
    def broken(job, env, on_phase):
        raise ZeroDivisionError("a bug")

    slots = [dispatch.Slot("a", "cpu", broken), dispatch.Slot("b", "cpu", broken)]
    with pytest.raises(ZeroDivisionError, match="a bug"):
        dispatch.LocalPool(slots).run(units(3), open_unit, Recorder(), lambda u, r: None)


def test_cpu_shares_are_disjoint_and_cover_every_core():
    assert devices.share_cpus(list(range(8)), 4) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert devices.share_cpus([0, 1, 2, 3, 4], 2) == [[0, 1, 2], [3, 4]]
    assert devices.share_cpus([5, 1], 3) == [[1], [5], []]


def test_gpu_slots_give_each_worker_its_gpu_and_its_share_of_the_cores(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    monkeypatch.setattr(devices, "core_of", lambda cpu: (0, cpu))  # 16 physical cores
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    pool = devices.slots([0, 3], timeout_s=10)
    slots = pool.slots
    assert pool.house == [0, 1]  # the run's own processes: an eighth of the cores, off the timed workers'
    assert [(s.name, s.device) for s in slots] == [("cuda:0", "cuda:0"), ("cuda:3", "cuda:0")]
    assert [s.locks for s in slots] == [[("cpu", False), ("cuda-0", True)], [("cpu", False), ("cuda-3", True)]]
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in slots] == ["0", "3"]
    assert all(s.env[cores.HOUSE_ENV] == "0,1" for s in slots)
    envs = [s.run.__self__.env for s in slots]
    assert [e["COMPILEBENCH_CPUS"] for e in envs] == ["2,3,4,5,6,7,8", "9,10,11,12,13,14,15"]
    assert all(e["OMP_NUM_THREADS"] == e["TORCHINDUCTOR_COMPILE_THREADS"] == "7" for e in envs)
    one = devices.one_gpu(2, ProcessExecutor(10), "GPU-1234-abcd")  # one GPU keeps every core but the house's
    (slot,) = one.slots
    assert slot.run.__self__.env == {} and one.house == [0, 1]
    assert slot.env == {"CUDA_VISIBLE_DEVICES": "GPU-1234-abcd", invariants.EXPECTED_GPU: "GPU-1234-abcd",
                        "COMPILEBENCH_CPUS": ",".join(map(str, range(2, 16))), cores.HOUSE_ENV: "0,1"}
    assert slot.locks == [("cpu", False), ("GPU-1234-abcd", True)]  # the physical GPU, whatever it is numbered


# Physical GPUs 0-3 of a fake machine; the run inherits CUDA_VISIBLE_DEVICES=2,3, so it calls them 0 and 1.
UUIDS = ["GPU-0000", "GPU-1111", "GPU-2222", "GPU-3333"]


class FakeProps:
    def __init__(self, physical):
        self.uuid, self.name = UUIDS[physical][len("GPU-"):], "NVIDIA H100 80GB HBM3"
        self.pci_domain_id, self.pci_bus_id, self.pci_device_id = 0, 0x10 + physical, 0


def fake_two_of_four_gpus(monkeypatch):
    import torch

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    visible = [2, 3]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: len(visible))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda d: FakeProps(visible[torch.device(d).index if isinstance(d, str) else d]))
    monkeypatch.setattr(devices.fingerprint, "collect", lambda device, **also: Environment(
        device=device, hostname="h", device_name="H100", torch="2.13", transformers="5"))


def test_gpus_all_under_an_inherited_cuda_visible_devices_runs_on_the_gpus_it_names(monkeypatch, tmp_path):
    fake_two_of_four_gpus(monkeypatch)
    monkeypatch.setenv("COMPILEBENCH_LOCK_DIR", str(tmp_path / "locks"))  # not the other pytest worker's runs' locks
    found = devices._answer("cuda", "all")
    assert found["gpus"] == [0, 1] and found["gpu_ids"] == {0: "GPU-2222", 1: "GPU-3333"}
    slots = devices.slots(found["gpus"], 10, found["gpu_ids"], gpu_cpus=found["gpu_cpus"]).slots
    seen, lock_dir = [], locks.lock_dir()

    def run_here(slot):
        def run(job, env, on_phase):
            held = sorted(n for n in os.listdir(lock_dir) if n.endswith(".lock.d") and os.listdir(os.path.join(lock_dir, n)))
            seen.append((slot.name, job.cases[0].device, env["CUDA_VISIBLE_DEVICES"], env[invariants.EXPECTED_GPU], held))
            return ok(job.cases)
        return run

    for slot in slots:
        slot.run = run_here(slot)
    for slot, unit in zip(slots, units(2)):  # one at a time: each sees only its own lock held
        slot.execute(unit, open_unit(unit), Recorder())
    assert seen == [("cuda:0", "cuda:0", "GPU-2222", "GPU-2222", ["GPU-2222.lock.d", "cpu.lock.d"]),
                    ("cuda:1", "cuda:0", "GPU-3333", "GPU-3333", ["GPU-3333.lock.d", "cpu.lock.d"])]


def test_without_uuids_the_inherited_list_still_names_the_physical_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    slots = devices.slots([0, 1], 10).slots
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in slots] == ["2", "3"]
    assert [s.locks[1][0] for s in slots] == ["cuda-2", "cuda-3"]
    assert all(invariants.EXPECTED_GPU not in s.env for s in slots)


def test_a_single_gpu_run_shows_its_worker_that_gpu_alone(monkeypatch):
    fake_two_of_four_gpus(monkeypatch)
    monkeypatch.setattr(placement.devices, "probe", lambda device, gpus=None: (
        lambda a: {**a, "env": Environment.from_dict(a["env"])})(devices._answer(device, gpus)))
    spec = RunSpec(models=("fault-ok",), variants=("eager",), device="cuda:1")
    spec, pool, targets = placement.this_device(spec)
    (slot,) = pool.slots
    assert spec.device == "cuda:1" and slot.device == "cuda:0"  # keyed as asked, seen as its only GPU
    assert slot.env == {"CUDA_VISIBLE_DEVICES": "GPU-3333", invariants.EXPECTED_GPU: "GPU-3333"}
    assert slot.locks == [("cpu", False), ("GPU-3333", True)]


def topology(cpu):
    """Two sockets of 4 cores with 2 hyperthreads each: cpu N and N+16 are siblings; 0-7 socket 0, 8-15 socket 1."""
    cpu %= 16
    return cpu // 8, cpu % 8


def test_each_gpu_gets_cores_local_to_it_one_logical_cpu_per_core():
    allowed = set(range(32))
    socket0, socket1 = [*range(0, 8), *range(16, 24)], [*range(8, 16), *range(24, 32)]
    shares = devices.place_cpus([0, 1, 2, 3], allowed, {0: socket0, 1: socket0, 2: socket1, 3: socket1}, topology)
    assert shares == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]  # no sibling 16-31, no far socket
    # locality unknown: every physical core, shared out; siblings still left out
    assert devices.place_cpus([0, 1], allowed, {}, topology) == [list(range(0, 8)), list(range(8, 16))]
    # a GPU with known locality keeps its socket; one without shares what no GPU is local to
    assert devices.place_cpus([0, 1], allowed, {0: socket1}, topology) == [list(range(8, 16)), list(range(0, 8))]


def test_a_worker_keeps_to_the_cpus_and_threads_it_is_given():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPU cores to tell a share from the whole")
    cpu = sorted(os.sched_getaffinity(0))[-1]
    executor = ProcessExecutor(timeout_s=300, env={"COMPILEBENCH_CPUS": str(cpu), "OMP_NUM_THREADS": "1"})
    (r,) = executor.run(fr.job([Case("fault-ok", 1, Variant("eager"))], POLICY), {}, lambda p: None)
    assert r.status == "ok"
    assert r.environment.cpu_affinity == 1 and r.environment.torch_threads == 1 and r.cpus == 1


@pytest.mark.parametrize("fork", [True, False])
def test_a_worker_counts_its_threads_on_its_own_cores_not_where_it_was_started(fork):
    """One GPU's run: the driver keeps to the house's cores while later launchers (or new interpreters) start, so
    they import torch there; a worker given more cores runs as many threads (one H200 run's repeats of a case ran
    with 16 threads and with 2)."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPU cores to tell a share from the whole")
    house, timed = sorted(os.sched_getaffinity(0))[:1], sorted(os.sched_getaffinity(0))
    executor = ProcessExecutor(timeout_s=300, fork=fork)
    with dispatch._kept_to(house):
        executor.start_launchers([1])
        (r,) = executor.run(fr.job([Case("fault-ok", 1, Variant("eager"))], POLICY),
                            {"COMPILEBENCH_CPUS": ",".join(map(str, timed))}, lambda p: None)
    assert r.status == "ok", r.message
    assert r.environment.cpu_affinity == r.environment.torch_threads == len(timed)


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG and pidfd are Linux's")
def test_a_worker_dies_with_the_process_that_started_it(tmp_path):
    import select

    fifo, never = tmp_path / "fifo", tmp_path / "never"
    os.mkfifo(fifo)
    os.mkfifo(never)  # the worker waits on it for a reply that never comes
    script = ("from compilebench.run.executors import ProcessExecutor\n"
              "from compilebench.core.case import Case\nfrom compilebench.core.job import Job, TimingPolicy\nfrom compilebench.core.spec import RunSpec\nfrom compilebench.core.variant import Variant\n"
              "ProcessExecutor(600).run(Job([Case('fault-handshake', 1, Variant('eager'))], TimingPolicy(5, 0, min_iters=1).resolve('forward', 'cpu')),"
              " {}, print)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL,
                              env={**os.environ, "COMPILEBENCH_FAULT_FIFO": str(fifo), "COMPILEBENCH_FAULT_REPLY": str(never),
                                   "TMPDIR": str(tmp_path)})  # the killed driver's job folder stays there
    try:
        with open(fifo) as f:
            worker = int(f.readline().split()[0])  # the handshake: the worker is running
        watch = os.pidfd_open(worker)
        parent.send_signal(signal.SIGKILL)  # the driver (or a Ray worker) dies without any clean-up
        parent.wait()
        ready, _, _ = select.select([watch], [], [], 30)  # readable when the worker has exited
        assert ready, "the worker outlived its parent"
        os.close(watch)
    finally:
        parent.kill()


def test_gpu_lists_parse_or_say_what_is_allowed():
    assert devices.parse_gpus("all", 4) == [0, 1, 2, 3]
    assert devices.parse_gpus("0,2", 4) == [0, 2]
    for text, message in [("0,4", "no CUDA device 4 here (allowed: 0..3 or all)"),
                          ("a,b", "expected GPU indices separated by commas"),
                          ("1,1", "listed twice")]:
        with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
            devices.parse_gpus(text, 4)
    with pytest.raises(UserError, match="GPUs of different types"):
        devices.check_one_type({0: "NVIDIA A100-SXM4-80GB", 1: "Tesla T4"}, "0,1")
    devices.check_one_type({0: "NVIDIA H100 80GB HBM3", 1: "NVIDIA H100 80GB HBM3"}, "0,1")


@pytest.mark.parametrize("version, built", [
    ("cuda: Optional[str] = None\nhip: Optional[str] = None\n", False),  # torch 2.13.0+cpu's, as written
    ("cuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n", True),
    ("cuda = None\nhip = '6.4.43482'\n", True),  # a ROCm build: torch.cuda is its GPU
    ("cuda = None\n", None),  # a file this does not know: ask the child
    ("cuda = None\nhip = None\nhip = (\n", None),
    (None, None),  # no version file
])
def test_the_build_of_torch_is_read_from_its_version_file(tmp_path, version, built):
    if version is not None:
        (tmp_path / "version.py").write_text("from typing import Optional\n__version__ = '2.13.0'\n" + version)
    assert devices.gpu_build(str(tmp_path)) is built


@pytest.mark.parametrize("built, asks", [(False, False), (True, True), (None, True)])
def test_the_device_is_asked_of_a_child_unless_torch_was_built_without_a_gpu(monkeypatch, built, asks):
    """--device unset: on a CPU build of torch the answer is the CPU with no child (one interpreter importing torch
    fewer: 1.5 CPU s and 1.3 s of a driver's start here); on a GPU build, or one this cannot read, the child asks CUDA,
    which the driver itself never initializes."""
    asked, real_run = [], subprocess.run

    def child(command, **kwargs):
        if command[1:3] != ["-m", "compilebench.run.devices"]:  # platform.processor(), as the fingerprint asks it
            return real_run(command, **kwargs)
        asked.append(command[1:3])
        answer = {"device": "cpu", "env": devices.fingerprint.collect("cpu").to_dict(), "gpus": []}
        return subprocess.CompletedProcess(command, 0, stdout=json.dumps(answer) + "\n", stderr="")

    monkeypatch.setattr(devices, "gpu_build", lambda: built)
    monkeypatch.setattr(devices.subprocess, "run", child)
    found = devices.probe(None)
    assert found["device"] == "cpu" and found["gpus"] == [] and found["env"].device == "cpu"
    assert asked == ([["-m", "compilebench.run.devices"]] if asks else [])
    assert devices.probe("cpu")["device"] == "cpu" and len(asked) == int(asks)  # named: never a child


@pytest.mark.parametrize("args, message", [
    (["--gpus", "0"], "--gpus 0: CUDA is not available on this machine"),
    (["--executor", "spark"], "unknown executor 'spark' (allowed: local, ray)"),
    (["--ray-address", "10.0.0.1:6379"], "--ray-address is for --executor ray"),
    (["--accelerator-type", "H100"], "--accelerator-type is for --executor ray"),
    (["--executor", "ray", "--gpus", "0,1"], "--gpus is for --executor local"),
    (["--executor", "ray", "--isolation", "inline"], "--executor ray runs them on the cluster"),
    (["--executor", "ray", "--cpus-per-case", "0"], "--cpus-per-case must be an integer >= 1, got 0"),
])
def test_bad_executor_options_are_one_line_and_exit_2(main_here, tmp_path, args, message):
    code, out, err = main_here("run", "--model", "fault-ok", "--variant", "eager", "--db", "r.db", *args)
    assert code == 2, err
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.db").exists()


def test_a_ray_gpu_is_locked_by_the_uuid_of_the_gpu_its_workers_see_not_the_pci_index(tmp_path, monkeypatch):
    """Issue 42, 3: Ray's GPU id, which it puts in CUDA_VISIBLE_DEVICES, is read by CUDA in its own order (fastest
    first by default), while nvidia-smi -i reads PCI order. On this fake node of mixed GPUs the two orders differ:
    the lock must go to the GPU the task's own torch sees as cuda:0."""
    import json
    import subprocess as sp

    from compilebench.run import devices, ray_cluster

    pci_order, cuda_order = ["GPU-a100", "GPU-h100"], ["GPU-h100", "GPU-a100"]  # the H100 is the faster
    smi = tmp_path / "nvidia-smi"  # what the lock asked before: the PCI index
    smi.write_text('#!/bin/sh\n[ "$3" = "-i" ] && [ "$4" = "0" ] && echo GPU-a100 || exit 6\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # what Ray sets in the task for its GPU id 0
    asked, real_run = [], sp.run

    def child(command, **kwargs):  # the device probe's child: torch under the task's CUDA_VISIBLE_DEVICES
        if command[1:3] != ["-m", "compilebench.run.devices"]:
            return real_run(command, **kwargs)
        visible = [int(i) for i in kwargs["env"]["CUDA_VISIBLE_DEVICES"].split(",")]
        asked.append(visible)
        answer = {"device": "cuda:0", "env": {}, "gpus": [], "gpu_ids": {"0": cuda_order[visible[0]]}, "gpu_cpus": {}}
        return sp.CompletedProcess(command, 0, stdout=json.dumps(answer) + "\n", stderr="")

    monkeypatch.setattr(devices.subprocess, "run", child)
    assert sp.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader", "-i", "0"], capture_output=True,
                  text=True).stdout.strip() == pci_order[0]  # the PCI index names the A100
    assert ray_cluster.task_gpu_uuid() == "GPU-h100" and asked == [[0]]  # the GPU CUDA gives the task
    assert devices.gpu_lock(0, "GPU-h100") == [("cpu", False), ("GPU-h100", True)]
    # no UUID known: the lock names the task's own CUDA_VISIBLE_DEVICES entry; the worker sees the UUID alone
    assert devices.gpu_lock(0, None) == [("cpu", False), ("cuda-0", True)]
    assert devices.gpu_env(0, "GPU-h100")["CUDA_VISIBLE_DEVICES"] == "GPU-h100"


@pytest.mark.parametrize("address, reported", [(None, "0"), ("ray://head:10001", None)])
def test_a_local_ray_cluster_a_run_starts_reports_no_usage_and_one_it_joins_is_left_as_set(monkeypatch, address,
                                                                                          reported):
    # Ray sends usage stats to its server by default from a cluster ray.init starts; a run that starts one turns that
    # off (unless the user set RAY_USAGE_STATS_ENABLED), and a cluster it joins keeps its own setting
    from compilebench.run import ray_cluster

    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "")  # recorded, so that what the run sets is undone after
    monkeypatch.delenv("RAY_USAGE_STATS_ENABLED")
    seen = []

    class Started(Exception):
        pass

    class FakeRay:
        @staticmethod
        def is_initialized():
            return False

        @staticmethod
        def init(**kwargs):
            seen.append((kwargs["address"], os.environ.get("RAY_USAGE_STATS_ENABLED")))
            raise Started

    monkeypatch.setattr(ray_cluster, "_ray", lambda: FakeRay)
    with pytest.raises(Started):
        ray_cluster.RayDispatcher(address=address, accelerator_types=None, device=None, cpus_per_case=None,
                                  timeout_s=None)
    assert seen == [(address, reported)]
