"""How workers start: forked from launchers that imported torch.compile's machinery and the run's model classes,
yet as fresh as new interpreters where it matters (the compiler's folders are the job's; no CUDA in the parent)."""

import os
import subprocess
import sys
import time

import fakeresults as fr
import pytest

from compilebench.core.case import Case
from compilebench.core.environment import Environment
from compilebench.core.job import TimingPolicy
from compilebench.core.variant import Variant
from compilebench.measure import compiler_state
from compilebench.run import executors, launcher, room

FAST = TimingPolicy(iters=3, warmup=1, min_iters=1)


def test_folders_inductor_fixes_on_import_follow_the_environment_and_come_back(tmp_path):
    import torch._dynamo.package as package
    import torch._inductor.codecache as codecache

    before = (codecache._HEADER_DIR, codecache._HEADER_LOCK_DIR, package.DynamoCache.path_prefix())
    env = compiler_state.env_for(str(tmp_path / "case"))
    with compiler_state.applied(env):
        assert codecache._HEADER_DIR.startswith(env["TMPDIR"] + os.sep)
        assert codecache._HEADER_LOCK_DIR.startswith(codecache._HEADER_DIR)
        assert package.DynamoCache.path_prefix() == os.path.join(env["TORCHINDUCTOR_CACHE_DIR"], "dynamo")
    assert (codecache._HEADER_DIR, codecache._HEADER_LOCK_DIR, package.DynamoCache.path_prefix()) == before


def test_a_launcher_imports_the_classes_of_the_zoo_models_it_is_given():
    import transformers

    assert launcher._preload_model("resnet-50") is transformers.ResNetForImageClassification
    assert launcher._preload_model("not-a-model") is None


def test_cuda_touched_by_a_launchers_imports_is_seen(tmp_path):
    clean = tmp_path / "clean"
    clean.write_text("7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/libtorch_cpu.so\n")
    touched = tmp_path / "touched"
    touched.write_text(clean.read_text() + "7f02-7f03 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libcuda.so.550.54\n")
    assert launcher.cuda_touched(str(clean)) is None
    # a driver this process has not loaded cannot be asked: unfit, to be safe
    assert launcher.cuda_touched(str(touched)) == ("it loaded the CUDA driver (libcuda), which could not be asked "
                                                   "whether it was initialized")
    assert launcher.cuda_touched() is None  # this CPU test process, with torch imported


# A driver as strict as the real one where the launcher asks it: before cuInit, every call answers
# CUDA_ERROR_NOT_INITIALIZED (cuda.h); after, cuDeviceGetCount counts.
FAKE_DRIVER = """
static int initialized = 0;
int cuInit(unsigned int flags) { initialized = 1; return flags == 0 ? 0 : 1; }
int cuDeviceGetCount(int *count) { if (!initialized) return 3; *count = 1; return 0; }
"""


def test_a_loaded_driver_is_fit_to_fork_until_something_initializes_it(tmp_path):
    """CUDA 13's cuBLASLt loads libcuda when torch is imported: a launcher stays fit (its children initialize the
    driver themselves) until something in it calls cuInit."""
    (tmp_path / "driver.c").write_text(FAKE_DRIVER)
    driver = tmp_path / "libcuda.so.1"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(driver), str(tmp_path / "driver.c")], check=True)
    code = ("import ctypes, sys\nfrom compilebench.run import launcher\n"
            "print(launcher.cuda_touched())\n"
            "driver = ctypes.CDLL(sys.argv[1])\nprint(launcher.cuda_touched())\n"
            "driver.cuInit(0)\nprint(launcher.cuda_touched())\n")
    said = subprocess.run([sys.executable, "-c", code, str(driver)], capture_output=True, text=True, check=True)
    assert said.stdout.splitlines() == [
        "None",  # no driver loaded
        "None",  # loaded, not initialized: as after `import torch` with CUDA 13
        "it initialized the CUDA driver (libcuda answered cuDeviceGetCount with 0, not 'not initialized')"]


# NVML as torch's fork-safe check uses it: nvmlInit counts up, nvmlShutdown down (NVML_ERROR_UNINITIALIZED, 1, once
# every init is undone), and the count answers only while initialized; it never touches the CUDA driver.
FAKE_NVML = """
static int inits = 0;
int nvmlInit(void) { inits++; return 0; }
int nvmlInit_v2(void) { inits++; return 0; }
int nvmlShutdown(void) { if (!inits) return 1; inits--; return 0; }
int nvmlDeviceGetCount_v2(unsigned int *count) { if (!inits) return 1; *count = 1; return 0; }
"""

# What torch 2.11+cu130 does on a GPU machine, on this CPU build: the CUDA driver loaded with torch (cuBLASLt loads
# it), torch.cuda.is_available() answered by cudaGetDeviceCount, which runs cuInit, and inductor asking it as
# torch/_inductor/runtime/benchmarking.py is imported (its line 20). Then the launcher's own preload.
AS_TORCH_2_11 = """
import ctypes, importlib.abc, importlib.machinery, os, sys
import torch

driver = ctypes.CDLL("libcuda.so.1")

def cuda_get_device_count():
    driver.cuInit(0)
    count = ctypes.c_int(0)
    driver.cuDeviceGetCount(ctypes.byref(count))
    return count.value

def is_available_as_a_cuda_build():  # the binding exists only while asked: the rest of this build stays a CPU one
    torch._C._cuda_getDeviceCount = cuda_get_device_count
    try:
        return torch.cuda.is_available()
    finally:
        del torch._C._cuda_getDeviceCount

class AsksAsItIsImported(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name != "torch._inductor.runtime.benchmarking":
            return None
        self.spec = importlib.machinery.PathFinder.find_spec(name, path)
        return importlib.machinery.ModuleSpec(name, self, origin=self.spec.origin)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__file__ = self.spec.origin
        self.spec.loader.exec_module(module)
        print("is_available at import:", is_available_as_a_cuda_build())

sys.meta_path.insert(0, AsksAsItIsImported())
from compilebench.run import launcher
print(launcher.imported({"inductor": True, "models": []}))
print(os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK"), ctypes.CDLL("libnvidia-ml.so.1").nvmlShutdown())
"""


def test_a_launcher_on_torch_2_11_with_a_gpu_leaves_the_driver_uninitialized(tmp_path):
    """Issue 50: on an H100 every launcher was unfit: torch 2.11's inductor asks torch.cuda.is_available() as it is
    imported, and its default answer initializes the driver. The launcher imports under torch's NVML-based check,
    then shuts NVML down and puts the variable back."""
    for name, source in (("libcuda.so.1", FAKE_DRIVER), ("libnvidia-ml.so.1", FAKE_NVML)):
        (tmp_path / f"{name}.c").write_text(source)
        subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / name), str(tmp_path / f"{name}.c")], check=True)
    env = {**os.environ, "LD_LIBRARY_PATH": str(tmp_path), "PYTHONWARNINGS": "ignore"}
    env.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
    said = subprocess.run([sys.executable, "-c", AS_TORCH_2_11], capture_output=True, text=True, env=env)
    assert said.returncode == 0, said.stderr[-3000:]
    assert said.stdout.splitlines() == [
        "is_available at import: True",  # NVML counted the GPU...
        "None",  # ...and the driver is still uninitialized: fit to fork CUDA workers
        "None 1",  # the variable as it was, NVML shut down as often as torch initialized it
    ]


class UnfitLauncher:
    """A launcher whose imports touched CUDA, as the real one reports it."""

    started = 0

    def __init__(self, env, models=(), inductor=False, environment=None):
        UnfitLauncher.started += 1

    def wait_ready(self):
        raise launcher.LauncherUnfit("it loaded the CUDA driver (libcuda)")

    def start(self, *args):
        self.wait_ready()

    def close(self):
        pass


def test_a_launcher_that_could_not_fork_cuda_workers_gives_way_to_new_interpreters(monkeypatch, capfd):
    monkeypatch.setattr(launcher, "Launcher", UnfitLauncher)
    message = "workers start as new interpreters: a launcher cannot fork them (it loaded the CUDA driver (libcuda))"
    UnfitLauncher.started = 0
    found_at_start = executors.ProcessExecutor(timeout_s=120)
    found_at_start.start_launchers([1, 2])  # while the launchers start, before anything runs
    assert not found_at_start.fork and UnfitLauncher.started == 2
    assert capfd.readouterr().err.count(message) == 1

    UnfitLauncher.started = 0
    ex = executors.ProcessExecutor(timeout_s=120)  # found when the first job is sent
    case = Case("fault-ok", 1, Variant("eager"), device="cpu", model_size="tiny")
    (result,) = ex.run(fr.job([case], FAST, repeat=1), {}, lambda p: None)
    assert result.status == "ok", result.message
    assert not ex.fork and UnfitLauncher.started == 1  # later jobs start new interpreters without asking again
    assert capfd.readouterr().err.count(message) == 1


class RecordingLauncher:
    """A launcher that only says what was asked of it."""

    log: list = []

    def __init__(self, env, models=(), inductor=False, environment=None):
        self.n = len([e for e in RecordingLauncher.log if e[0] == "start"]) + 1
        RecordingLauncher.log.append(("start", self.n, models, inductor))

    def wait_ready(self):
        RecordingLauncher.log.append(("ready", self.n))

    def close(self):
        RecordingLauncher.log.append(("close", self.n))


def test_launchers_start_early_without_waiting_and_the_sweep_waits_only_for_those_it_needs(monkeypatch):
    monkeypatch.setattr(launcher, "Launcher", RecordingLauncher)
    RecordingLauncher.log = []
    ex = executors.ProcessExecutor(timeout_s=120, models=("resnet-50",), inductor=True)
    ex.start_launchers(range(1, 101), wait=False)  # as the driver does before it probes the device
    assert RecordingLauncher.log == [("start", n, ("resnet-50",), True) for n in range(1, launcher.MAX_LAUNCHERS + 1)]
    RecordingLauncher.log = []
    ex.start_launchers([2, 3])  # a resumed sweep needs only repeats 2 and 3: the others stop, these are waited for
    assert sorted(e for e in RecordingLauncher.log if e[0] == "close") == [("close", n) for n in (1, 4, 5, 6, 7, 8)]
    assert sorted(e for e in RecordingLauncher.log if e[0] == "ready") == [("ready", 2), ("ready", 3)]
    assert sorted(repeat for _, repeat in ex._launchers) == [2, 3]


def _host(monkeypatch, cores: int, available: int | None = 64 << 30):
    monkeypatch.setattr(room.os, "sched_getaffinity", lambda pid: set(range(cores)))
    monkeypatch.setattr(room, "available_bytes", lambda: available)


def _asked(what: str, since: int) -> list[int]:
    """The launchers (numbered in the order they started: here, by repeat) asked `what` since log entry `since`."""
    return sorted(e[1] for e in RecordingLauncher.log[since:] if e[0] == what)


def test_where_the_host_has_room_a_later_looks_launchers_start_with_the_first_so_a_look_waits_for_no_import(
        monkeypatch):
    monkeypatch.setattr(launcher, "Launcher", RecordingLauncher)
    _host(monkeypatch, cores=16)
    RecordingLauncher.log = []
    ex = executors.ProcessExecutor(timeout_s=120, most_repeats=7)  # the quick suite: looks at 3, 5 and 7
    ex.start_launchers(range(1, 4), wait=False)  # as the driver does before it probes the device
    assert _asked("start", 0) == [1, 2, 3, 4, 5, 6, 7] and _asked("close", 0) == []
    mark = len(RecordingLauncher.log)
    ex.start_launchers([1, 2, 3])  # the planned rounds: every launcher is waited for, none imports beside a loop
    assert _asked("start", mark) == _asked("close", mark) == [] and _asked("ready", mark) == [1, 2, 3, 4, 5, 6, 7]
    mark = len(RecordingLauncher.log)
    ex.start_launchers([4, 5])  # the first look: its launchers are there; the planned rounds' stop
    assert _asked("start", mark) == [] and _asked("close", mark) == [1, 2, 3]
    mark = len(RecordingLauncher.log)
    ex.start_launchers([6, 7])
    assert _asked("start", mark) == [] and _asked("close", mark) == [4, 5]
    assert sorted(repeat for _, repeat in ex._launchers) == [6, 7]


@pytest.mark.parametrize("cores, available, at_the_look", [
    (7, 64 << 30, [4, 5, 6, 7]), (16, 3 << 30, [4, 5]), (2, 64 << 30, [4, 5]), (16, None, [4, 5])])
def test_without_room_for_every_launcher_the_first_look_starts_its_own(monkeypatch, cores, available, at_the_look):
    monkeypatch.setattr(launcher, "Launcher", RecordingLauncher)
    _host(monkeypatch, cores, available)  # 7 launchers need 8 cores and 7 GiB, 4 need 5 and 4 GiB; None: unknown
    RecordingLauncher.log = []
    ex = executors.ProcessExecutor(timeout_s=120, most_repeats=7)
    ex.start_launchers(range(1, 4), wait=False)
    ex.start_launchers([1, 2, 3])
    assert _asked("start", 0) == [1, 2, 3]
    mark = len(RecordingLauncher.log)
    ex.start_launchers([4, 5])  # with the last look's too, where there is room for those four
    assert _asked("start", mark) == at_the_look and _asked("close", mark) == [1, 2, 3]


def test_launchers_started_ahead_are_kept_though_they_now_hold_the_memory_that_made_room_for_them(monkeypatch):
    monkeypatch.setattr(launcher, "Launcher", RecordingLauncher)
    _host(monkeypatch, cores=16, available=8 << 30)
    RecordingLauncher.log = []
    ex = executors.ProcessExecutor(timeout_s=120, most_repeats=7)
    ex.start_launchers(range(1, 4), wait=False)
    monkeypatch.setattr(room, "available_bytes", lambda: 1 << 30)  # the 7 launchers took most of it
    ex.start_launchers([1, 2, 3])
    assert _asked("start", 0) == [1, 2, 3, 4, 5, 6, 7] and _asked("close", 0) == []


def test_room_for_launchers_counts_a_core_each_beside_the_drivers_and_memory_for_the_new_ones():
    gib = 1 << 30
    assert room.room_for(7, 7, cpus=8, available=7 * gib)
    assert not room.room_for(7, 7, cpus=7, available=64 * gib)
    assert not room.room_for(7, 7, cpus=16, available=7 * gib - 1)
    assert room.room_for(7, 2, cpus=16, available=2 * gib)


def _fake_host(tmp_path, cgroup_line: str, files: dict[str, str], available_kb: int = 64 << 20) -> tuple[str, str]:
    proc, cgroup = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(f"MemTotal: {available_kb * 2} kB\nMemAvailable: {available_kb} kB\n")
    (proc / "self" / "cgroup").write_text(cgroup_line + "\n")
    for name, text in files.items():
        (cgroup / name).parent.mkdir(parents=True, exist_ok=True)
        (cgroup / name).write_text(text + "\n")
    return str(proc), str(cgroup)


def test_the_memory_available_is_what_a_cgroup_limit_leaves_at_any_level_where_less_than_memavailable(tmp_path):
    gib = 1 << 30
    v2 = _fake_host(tmp_path / "v2", "0::/pod/worker",
                    {"pod/memory.max": str(8 * gib), "pod/memory.current": str(5 * gib),
                     "pod/worker/memory.max": "max", "pod/worker/memory.current": str(5 * gib)})
    assert room.available_bytes(*v2) == 3 * gib  # the pod's limit, one level up, leaves 3 GiB of its 8
    v1 = _fake_host(tmp_path / "v1", "4:memory:/docker/abc",
                    {"memory/docker/abc/memory.limit_in_bytes": str(4 * gib),
                     "memory/docker/abc/memory.usage_in_bytes": str(gib),
                     "memory/memory.limit_in_bytes": "9223372036854771712", "memory/memory.usage_in_bytes": str(gib)})
    assert room.available_bytes(*v1) == 3 * gib
    unlimited = _fake_host(tmp_path / "none", "0::/", {"memory.max": "max", "memory.current": str(gib)})
    assert room.available_bytes(*unlimited) == 64 * gib  # MemAvailable
    assert room.available_bytes(str(tmp_path / "absent"), str(tmp_path)) is None  # no /proc/meminfo: unknown


@pytest.mark.slow
@pytest.mark.alone  # any compile on the machine may write into the shared folder it watches
def test_a_compile_in_a_forked_worker_writes_its_headers_into_its_own_folder_only(tmp_path):
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    shared = os.path.join(default_cache_dir(), "precompiled_headers")  # where the launcher's import pointed
    seen = set(os.listdir(shared)) if os.path.isdir(shared) else set()
    ex = executors.ProcessExecutor(timeout_s=600, models=("fault-ok",))
    ex.start_launchers([1])
    env = compiler_state.env_for(str(tmp_path / "state"))
    since = time.time()
    case = Case("fault-ok", 1, Variant("default"), device="cpu", model_size="tiny")
    (r,) = ex.run(fr.job([case], FAST, compile_cache="cold"), env, lambda p: None)
    assert r.status == "ok", (r.message, r.traceback)
    headers = [f for _, _, files in os.walk(env["TMPDIR"]) for f in files if f.endswith(".gch")]
    assert headers, "the compile made no precompiled header in its own folder"
    if os.path.isdir(shared):
        new = [f for f in os.listdir(shared) if f not in seen or os.path.getmtime(os.path.join(shared, f)) >= since]
        assert new == []


def test_launchers_start_beside_the_probe_only_where_the_probe_cannot_refuse_the_device(monkeypatch):
    from compilebench.core.errors import UserError
    from compilebench.core.spec import RunSpec
    from compilebench.run import devices, placement

    events = []
    monkeypatch.setattr(executors.ProcessExecutor, "start_launchers",
                        lambda self, repeats, environments=(None,), wait=True:
                        events.append(("launchers", list(repeats), wait, self.most_repeats)))

    def probed(device, gpus=None):
        events.append(("probe", device))
        if device == "cuda":
            raise UserError("--device cuda: CUDA is not available on this machine (allowed here: cpu)")
        env = Environment(hostname="here", device_name="cpu", torch="2", transformers="5")
        return {"device": "cpu", "env": env, "gpus": [], "gpu_ids": {}}

    monkeypatch.setattr(devices, "probe", probed)
    spec = RunSpec(models=("resnet-50",), repeats=3, max_repeats=7)
    placement.this_device(spec)
    assert events == [("launchers", [1, 2, 3], False, 7), ("probe", None)]  # 7: the repeats its last look may reach
    events.clear()
    with pytest.raises(UserError):
        placement.this_device(RunSpec(models=("resnet-50",), device="cuda"))
    assert events == [("probe", "cuda")]  # refused before anything started


@pytest.mark.slow  # a real compile, export or import: seconds on 2 cores
def test_a_launcher_preloads_a_models_classes_without_importing_torchao():
    """transformers imports torchao with every model class where torchao is installed, and torchao's import left
    an H200's launcher unable to fork CUDA workers: the launcher keeps it out, and a worker imports it itself."""
    pytest.importorskip("torchao")
    code = ("import sys\nfrom compilebench.run import launcher\n"
            "assert launcher.imported({'models': ['vit']}) is None\n"
            "print('torchao' in sys.modules)\n"
            "import torchao.quantization\n"
            "from transformers.utils import import_utils\n"
            "print(import_utils.is_torchao_available())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]
    # without the launcher's care, the same import brings torchao in
    plain = subprocess.run([sys.executable, "-c", "import sys, transformers\ntransformers.ViTForImageClassification\n"
                            "print('torchao' in sys.modules)"], capture_output=True, text=True, check=True)
    assert plain.stdout.split() == ["True"]
