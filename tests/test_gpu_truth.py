"""GPU truth, round two (issue 42): what the newest CUDA paths would get wrong on a real GPU, each tested on the CPU
with a fake as strict as the real API, and the self-checks that flag what no fake can prove."""

import os
import types

import pytest
from fakecuda import FakeAllocator

from compilebench.core.repeat import Repeat
from compilebench.core.variant import Variant
from compilebench.measure import conditions, fingerprint, precision, recording


def test_shapes_steady_peak_is_the_loops_and_not_the_compiles(monkeypatch):
    """Issue 42, 2: a served sequence of shapes compiles before each shape's loop; its steady peak must be the
    largest loop's, and its compile peak what came between the loops (the compile workspaces, the recording)."""
    mem = FakeAllocator().install(monkeypatch)
    memory = recording.Memory("cuda:0")
    memory.start()
    for compile_bytes, steady_bytes in ((1000, 100), (2000, 150), (500, 120)):  # three shapes
        mem.malloc(compile_bytes)  # the shape's first call compiles: its workspace, then freed
        mem.free(compile_bytes)
        memory.steady()
        mem.malloc(steady_bytes)  # the timed loop
        mem.free(steady_bytes)
        memory.after_loop()
    mem.malloc(5000)  # the second pass and the output check come after every loop: not a steady figure
    mem.free(5000)
    rep = Repeat()
    memory.record(rep)
    assert (rep.peak_mem_bytes, rep.compile_peak_mem_bytes) == (150, 2000) and rep.self_checks == []


def test_one_loop_reads_the_steady_peak_as_before_and_a_steady_peak_above_the_compiles_is_flagged(monkeypatch):
    mem = FakeAllocator().install(monkeypatch)
    memory = recording.Memory("cuda:0")
    memory.start()
    mem.malloc(300 * 2**20)
    mem.free(300 * 2**20)
    memory.steady()
    mem.malloc(100 * 2**20)  # forward.py: one loop, no after_loop(): the peak is read at the end
    rep = Repeat()
    memory.record(rep)
    assert (rep.peak_mem_bytes, rep.compile_peak_mem_bytes) == (100 * 2**20, 300 * 2**20) and not rep.self_checks
    mem.malloc(400 * 2**20)  # the steady state needing more than the first calls did: the reset was not where it
    rep = Repeat()            # should have been
    memory.record(rep)
    assert rep.self_checks and "steady peak memory (500 MiB) is above the compile's (300 MiB)" in rep.self_checks[0]


def test_a_cuda_graphs_steady_peak_holds_the_pool_it_replays_into(monkeypatch):
    """Found on an H200 (torch 2.11): a reduce-overhead model's steady peak read 0 MB beside eager's 35, because a
    graph replays into its private pool's memory, which the allocator counts free once recording is done. The
    steady peak must hold what the pools reserve beyond their live outputs; eager (no pool) reads as before."""
    mem = FakeAllocator().install(monkeypatch)
    memory = recording.Memory("cuda:0")
    mem.malloc(10 * 2**20)  # the weights, before the memory is watched
    memory.start()
    mem.malloc(300 * 2**20)  # compile and autotune workspaces, freed (cached)
    mem.free(300 * 2**20)
    mem.record_graph((1, 0), working=64 * 2**20, outputs=2**20)  # the warm-up records the graph
    memory.steady()
    for _ in range(3):
        pass  # replays: no allocator traffic at all, yet the graph uses its 65 MiB pool
    rep = Repeat()
    memory.record(rep)
    assert rep.cudagraph_pool_bytes == 65 * 2**20 and rep.peak_mem_kind == "cuda_steady"
    assert rep.peak_mem_bytes == (10 + 65) * 2**20  # weights + the pool (its live output counted once)
    assert not rep.self_checks  # the steady state (75 MiB) is below the compile's peak (310 MiB)

    shapes = recording.Memory("cuda:0")  # shapes: a graph per shape, the pools read after each loop
    shapes.start()
    for pool, working in (((2, 0), 8 * 2**20), ((3, 0), 16 * 2**20)):
        mem.record_graph(pool, working=working, outputs=0)
        shapes.steady()
        shapes.after_loop()
    rep = Repeat()
    shapes.record(rep)
    assert rep.cudagraph_pool_bytes == (65 + 8 + 16) * 2**20
    assert rep.peak_mem_bytes == (10 + 65 + 8 + 16) * 2**20  # every pool recorded so far stays held


def test_cuda_graphs_recorded_with_no_pool_in_the_snapshot_are_a_failed_self_check(monkeypatch):
    """What no fake can prove: that the real allocator shows the graphs' pools. Graphs recorded and no pool seen is
    said on the result, so a steady peak that may leave them out is never a silent number."""
    FakeAllocator().install(monkeypatch)
    recorder = recording.Recorder.__new__(recording.Recorder)
    recorder.memory = recording.Memory("cuda:0")
    recorder.memory.start()
    recorder.memory.steady()
    recorder.cudagraphs = types.SimpleNamespace(skips=0, recorded=2, reasons=[], engaged=True)
    case = types.SimpleNamespace(device="cuda:0", variant=Variant(mode="reduce-overhead"))  # a real variant: every field
    compiled = types.SimpleNamespace(compile_s=1.0, graphs=1, cache_hits=0, graph_breaks=0, break_reasons=[],
                                     recompile_reasons=[], phases={}, limit_hits=0)
    rep = Repeat()
    recorder.finish(rep, case, types.SimpleNamespace(recompiles=0), compiled)
    assert rep.cudagraphs_recorded == 2 and rep.cudagraph_pool_bytes == 0
    assert any("no private pool" in c for c in rep.self_checks) and rep.status == "ok"


class MigNvml(types.SimpleNamespace):
    """pynvml on a MIG-partitioned board, as strict as the real one: a UUID it does not know is an error (the
    instance is MIG-..., never GPU-...), and a MIG instance's handle answers none of the board's readings."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 0, 1, 0

    class NVMLError(Exception):
        pass

    def nvmlInit(self):
        pass

    def nvmlDeviceGetHandleByUUID(self, uuid):
        handles = {"GPU-board-0": "board", "MIG-5a7c": "mig"}
        if uuid not in handles:
            raise self.NVMLError("Not Found")
        return handles[uuid]

    def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, handle):
        assert handle == "mig"
        return "board"

    def _board(self, h, value):
        if h != "board":
            raise self.NVMLError("Not Supported")
        return value

    def nvmlDeviceGetClockInfo(self, h, which):
        return self._board(h, 1410)

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        return self._board(h, 123_000)

    def nvmlDeviceGetPowerUsage(self, h):
        return self._board(h, 250_000)

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self._board(h, 0)


def test_a_mig_instance_reads_its_boards_counters_and_says_so(monkeypatch):
    """Issue 42, 4: a MIG instance's UUID starts with MIG-; built as GPU-..., NVML's lookup failed and clocks, power
    and energy went missing without a word."""
    fake = MigNvml()
    assert conditions.Nvml.open_with(fake, "GPU-5a7c", 0) is None  # the old prefix: not found, and now said
    assert "NVML did not open GPU-5a7c" in conditions.Nvml.error and "Not Found" in conditions.Nvml.error
    nvml = conditions.Nvml.open_with(fake, "MIG-5a7c", 0)
    reading = nvml.read()
    assert (reading.sm_clock_mhz, reading.energy_mj, reading.power_w) == (1410, 123_000, 250.0)
    assert nvml.facts()["gpu_mig_instance"] == "MIG-5a7c" and "shared with its other MIG" in nvml.facts()["gpu_readings"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-5a7c")
    assert fingerprint.uses_mig()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-board-0,1")
    assert not fingerprint.uses_mig()


def test_tf32_is_set_through_the_new_precision_api_where_torch_has_it():
    """Issue 42, 5 (on this torch's real API, which a CPU build has too): the legacy flags left cuDNN's backend value
    at 'none', which inductor's convolution templates read; reading the legacy flags after the new API was used
    raises torch's 'mix of the legacy and new APIs' error."""
    import torch

    assert precision.new_api()  # torch 2.13
    before = precision.effective()
    with precision.tf32(True):
        now = precision.effective()
        assert torch.backends.cudnn.fp32_precision == "tf32" == torch.backends.cuda.matmul.fp32_precision
        assert (now["matmul"], now["conv"], now["api"]) == ("tf32", "tf32", "fp32_precision")
        assert precision.not_taken(True, now) is None and precision.matmul_precision_words() == "high"
    with precision.tf32(False):
        now = precision.effective()
        assert (now["matmul"], now["conv"]) == ("ieee", "ieee") and precision.not_taken(False, now) is None
    assert precision.effective() == before  # put back for the next inline case
    said = precision.not_taken(True, {"matmul": "tf32", "conv": "ieee"})
    assert said == "--tf32 did not take: conv uses ieee"


def test_an_energy_counter_that_did_not_advance_is_not_reported_and_is_flagged():
    """Issue 42, 6: NVML's energy was only checked for presence; a counter that reads 0 (or wrapped) over a loop that
    ran cannot be energy per call."""
    from compilebench.core.case import Case
    from compilebench.core.conditions import Conditions
    from compilebench.core.result import Result
    from compilebench.core.variant import Variant

    m = types.SimpleNamespace(iters_requested=3, min_iters=1, stopped_early=False, loop_wall_ns=3_000_000,
                              loop_started_at=1.0, loop_ended_at=1.003, conditions=Conditions(gpu_energy_j=0.0))
    rep = Repeat()
    recording.record_loop(rep, m, [1_000_000] * 3, alone=True)
    assert rep.energy_per_call_j is None and "energy counter moved 0 J" in rep.self_checks[0]
    m.conditions = Conditions(gpu_energy_j=0.9)
    fine = Repeat()
    recording.record_loop(fine, m, [1_000_000] * 3, alone=True)
    assert fine.energy_per_call_j == pytest.approx(0.3) and not fine.self_checks
    r = Result(Case("vit", 1, Variant("eager")), [rep])
    assert "self-check" in r.flags and r.self_checks == [rep.self_checks[0]]


def test_the_gpu_acceptance_script_lists_every_check_with_the_path_it_covers():
    import os
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "gpu_acceptance.py")
    out = subprocess.run([sys.executable, script, "--list"], capture_output=True, text=True, check=True).stdout
    listed = {line.split()[0]: line for line in out.splitlines()}
    for name in ("clock", "shapes", "profile", "mega", "aot-inductor", "shapes-graphs", "energy"):
        assert name in listed and len(listed[name]) > 40, out
    assert "no annotation" in listed["profile"] and "missed 0" in listed["mega"]


def test_the_gpu_acceptance_script_skips_what_its_budget_cannot_hold_and_says_so(tmp_path):
    """A lease's time limit must end no check halfway: a check that would not fit the budget is skipped, in words."""
    import os
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "gpu_acceptance.py")
    out = subprocess.run([sys.executable, script, "--rehearse", "--only", "aot-inductor,launcher", "--budget", "60",
                          "--keep", str(tmp_path)], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert [line.split()[:2] for line in lines[1:3]] == [["skipped", "aot-inductor"], ["skipped", "launcher"]], out
    assert "needs about 92 s" in lines[1] and "needs about 120 s" in lines[2], out
    assert lines[-1].startswith("0 passed, 0 failed, 2 skipped of 2 checks") and os.listdir(tmp_path) == [], out


_ACCEPTANCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks",
                           "gpu_acceptance.py")


def _keep_folder_as_a_lease_leaves_it(keep):
    """A --keep folder as checks leave it: results files beside weights, compiler caches, scratch and traces."""
    (keep / "compiler" / "inductor").mkdir(parents=True)
    (keep / "compiler" / "inductor" / "graph.py").write_text("cached")
    (keep / "worker-gap" / "plain-tmp").mkdir(parents=True)
    (keep / "worker-gap" / "plain-tmp" / "kernel.so").write_bytes(b"\0")
    for name, data in {"quick.db": b"db", "quick.log": b"log", "worker-gap/summary.json": b"{}",
                       "worker-gap/weights.pt": b"\0", "worker-gap/plain-default.trace.json": b"{}",
                       "worker-gap/huge.db": b"\0" * ((8 << 20) + 1)}.items():
        (keep / name).write_bytes(data)


def test_the_gpu_acceptance_script_bundles_its_results_files_and_leaves_out_the_bulk(tmp_path):
    """A lease brings back 8 files: --bundle packs the databases, logs, summaries and traces into one, and nothing
    else."""
    import subprocess
    import sys
    import tarfile

    keep, bundle = tmp_path / "keep", tmp_path / "out" / "lease.tgz"
    keep.mkdir()
    _keep_folder_as_a_lease_leaves_it(keep)
    args = [sys.executable, _ACCEPTANCE, "--rehearse", "--only", "aot-inductor", "--budget", "1", "--keep", str(keep),
            "--bundle", str(bundle)]
    refused = subprocess.run(args, capture_output=True, text=True)  # its folder does not exist yet
    assert refused.returncode == 2 and refused.stderr.startswith("--bundle: no folder") and not bundle.exists()
    bundle.parent.mkdir()
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    with tarfile.open(bundle) as tar:
        assert tar.getnames() == ["quick.db", "quick.log", "worker-gap/summary.json",
                                  "worker-gap/plain-default.trace.json"], out  # the traces after the results
        assert tar.extractfile("quick.db").read() == b"db"
    assert "bundled 3 results files and 1 traces" in out.splitlines()[-1], out
    assert not os.path.exists(str(bundle) + ".part")


def test_a_bundle_takes_traces_only_as_far_as_their_room_goes(tmp_path, monkeypatch):
    """The results files whatever their sum; then each trace that still fits the traces' room, in order."""
    import tarfile

    monkeypatch.syspath_prepend(os.path.dirname(_ACCEPTANCE))
    import gpu_acceptance

    monkeypatch.setattr(gpu_acceptance, "TRACES_MAX_BYTES", 10)
    (tmp_path / "run.traces").mkdir()
    for name, size in {"a.trace.json": 6, "b.trace.json": 6, "run.traces/c.profile.json": 4, "run.db": 50}.items():
        (tmp_path / name).write_bytes(b"x" * size)
    assert gpu_acceptance.bundle(str(tmp_path), str(tmp_path / "b.tgz")) == (1, 2)
    with tarfile.open(tmp_path / "b.tgz") as tar:
        assert tar.getnames() == ["run.db", "a.trace.json", "run.traces/c.profile.json"]


def test_a_gpu_acceptance_script_stopped_by_a_timeout_still_bundles_what_it_has(tmp_path):
    """`timeout` ends a lease's script with SIGTERM to its process group: the results so far are bundled anyway."""
    import signal
    import subprocess
    import sys
    import tarfile

    keep, bundle = tmp_path / "keep", tmp_path / "lease.tgz"
    keep.mkdir()
    _keep_folder_as_a_lease_leaves_it(keep)
    p = subprocess.Popen([sys.executable, _ACCEPTANCE, "--rehearse", "--only", "worker-gap", "--keep", str(keep),
                          "--bundle", str(bundle)], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert p.stdout.readline().startswith("1 GPU(s)")  # its checks have begun
        os.killpg(p.pid, signal.SIGTERM)
        rest = p.stdout.read()
    finally:
        p.wait()
    assert p.returncode == 128 + signal.SIGTERM and "bundled" in rest, rest
    with tarfile.open(bundle) as tar:
        assert {"quick.db", "quick.log", "worker-gap/summary.json"} <= set(tar.getnames())


def test_worker_gap_counts_what_the_steps_descendants_ran_beside_its_timed_calls(monkeypatch):
    """Issue 62: inductor wakes its compile pool at every compile of a graph on a GPU (one loaded from its cache
    too), on cores whose CPU a worker's own share never reads. worker_gap's steps read the process's
    descendants before and after their timed calls: which ran, which started or ended between, and the CPU seconds
    they used meanwhile (a child that ended takes its seconds with it)."""
    import subprocess
    import sys

    monkeypatch.syspath_prepend(os.path.dirname(_ACCEPTANCE))
    import worker_gap

    wait = "import sys; print('ready', flush=True); sys.stdin.readline()"
    work = wait + "\nx = 0\nfor i in range(3_000_000): x += i\nprint('done', flush=True); sys.stdin.readline()"

    def child(code):
        p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline() == "ready\n"  # a handshake: it runs, before any reading
        return p

    idle, busy = child(wait), child(work)
    late = None
    try:
        before = worker_gap.helpers()
        idle.stdin.close()
        idle.wait()  # ends between the readings
        busy.stdin.write("go\n")
        busy.stdin.flush()
        assert busy.stdout.readline() == "done\n"
        late = child(wait)  # starts between them
        after = worker_gap.helpers()
    finally:
        for p in (idle, busy, late):
            if p is not None:
                p.kill()
                p.wait()
    ours = {idle.pid, busy.pid, late.pid}  # an xdist worker may hold children of earlier tests
    assert {idle.pid, busy.pid} <= set(before) and {busy.pid, late.pid} <= set(after) and idle.pid not in after
    mine = [{p: v for p, v in reading.items() if p in ours} for reading in (before, after)]
    got = worker_gap.beside(*mine)
    assert (got["processes"], got["started"], got["ended"]) == (2, 1, 1), got
    assert got["names"] == [f"{os.path.basename(sys.executable)} -c"] and got["cpu_s"] >= 0.05, got
    assert "2 descendant process(es)" in worker_gap._helpers_said(got)
