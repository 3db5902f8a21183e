"""CUDA-only code paths, checked on a CPU machine with fakes: CI never has a GPU."""

import time

import pytest
import torch
from fakeclock import FakeClock
from fakecuda import FakeAllocator, FakeCuda

from compilebench.core.case import Case
from compilebench.core.conditions import Conditions
from compilebench.core.environment import Environment
from compilebench.core.errors import UserError
from compilebench.core.job import TimingPolicy
from compilebench.core.repeat import Repeat
from compilebench.core.variant import Variant
from compilebench.measure import fingerprint, invariants, recording, timing, warmup
from compilebench.run import devices


class SyncCountingClock(FakeClock):
    def __init__(self):
        super().__init__()
        self.syncs = []

    def sync(self):
        self.syncs.append(self.t)


@pytest.mark.parametrize("iters", [1, 10, 300])
def test_no_synchronize_inside_the_timed_loop(iters):
    clock = SyncCountingClock()
    timing.measure(lambda: clock.advance(1), iters=iters, warmup=3, clock=clock)
    # before and after the first call, after warm-up, once after the whole timed loop: never per iteration
    assert len(clock.syncs) == 4
    assert clock.syncs[-1] == 1 + 3 + iters


def test_events_are_recorded_on_the_stream_of_the_device_the_model_runs_on(monkeypatch):
    # --device cuda:1 inline: the current device is still GPU 0. Events recorded on its stream would time an idle
    # GPU (0 ms per call); recorded on GPU 1's stream they time the model.
    cuda = FakeCuda(devices=2, current=0).install(monkeypatch)
    clock = timing.CudaClock("cuda:1")
    m = timing.measure(lambda: cuda.work(device=1, ms=2.5), iters=4, warmup=1, clock=clock)
    assert m.samples_ns == [2_500_000] * 4
    assert set(cuda.syncs) == {1} and len(cuda.syncs) == 4  # first call (2), warm-up, loop: never GPU 0
    assert clock.name == "cuda_events"


def test_the_fake_event_is_as_strict_as_a_real_one(monkeypatch):
    cuda = FakeCuda(devices=2).install(monkeypatch)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record(cuda.current_stream(0))
    b.record(cuda.current_stream(1))
    with pytest.raises(RuntimeError, match="different devices"):
        a.elapsed_time(b)
    with pytest.raises(RuntimeError, match="never recorded"):
        torch.cuda.Event(enable_timing=True).elapsed_time(a)


def test_events_on_the_wrong_stream_are_caught_by_the_clock_check(monkeypatch):
    # The bug this guards against: events on GPU 0 while the model runs on GPU 1. The samples then hold nothing of
    # the loop's wall time, and the result says so instead of printing a number.
    cuda = FakeCuda(devices=2).install(monkeypatch)
    clock = timing.CudaClock("cuda:0")
    m = timing.measure(lambda: (cuda.work(device=1, ms=2.0), time.sleep(0)), iters=20, warmup=0, clock=clock)
    rep = Repeat()
    recording.record(rep, m, clock, sync_each_call=False, alone=True)
    assert rep.samples_over_wall == 0 and "clock" in rep.flags


@pytest.mark.parametrize("samples, wall, flagged", [([1_000] * 10, 10_500, False), ([1_000] * 10, 20_000, True),
                                                    ([1_000] * 10, 9_000, True), ([1_000] * 10, 0, False)])
def test_the_clock_flag_holds_the_samples_against_the_wall(samples, wall, flagged):
    m = timing.Measurement(0, warmup.WarmUp(0, 0, warmup.FIXED), 10, 1, samples, wall, False, None)
    rep = Repeat()
    recording.record(rep, m, timing.CudaClock("cuda:0"), sync_each_call=False, alone=True)
    assert ("clock" in rep.flags) == flagged
    host = Repeat()  # a host clock times each call itself: nothing to hold against
    recording.record(host, m, timing.HostClock(), sync_each_call=False, alone=True)
    assert "clock" not in host.flags and host.samples_over_wall is None


def test_sync_each_call_times_each_call_to_completion():
    clock = SyncCountingClock()
    queued = []

    def call():  # the host queues 1 unit; the device needs 5 more before the call is done
        clock.advance(1)
        queued.append(5)

    def sync():
        clock.syncs.append(clock.t)
        while queued:
            clock.advance(queued.pop())

    clock.sync = sync
    m = timing.measure(call, iters=3, warmup=0, clock=clock, sync_each_call=True)
    assert m.samples_ns == [6, 6, 6]  # launch and completion, not the launch alone
    piped = timing.measure(call, iters=3, warmup=0, clock=clock)
    assert piped.samples_ns == [1, 1, 1]  # the host clock of a pipelined loop sees only the launches


def test_warm_up_runs_until_its_minimum_time_has_passed():
    clock = FakeClock()
    w = warmup.warm_up(lambda: clock.advance(3_000_000), 2, clock, min_s=0.1)  # 3 ms calls, 0.1 s floor
    assert w.calls == 2 + 33 and w.ns == 105_000_000  # a window of 0.1 s of calls, until the floor has passed
    assert warmup.warm_up(lambda: clock.advance(3_000_000), 50, clock, min_s=0.1).calls == 50  # the count, when longer
    m = timing.measure(lambda: clock.advance(3_000_000), iters=5, warmup=2, clock=clock, warmup_s=0.1)
    assert m.warmup.calls == 35 and m.warmup.ended == warmup.FIXED
    assert TimingPolicy().resolve("forward", "cuda:0").warmup_s == 1.0
    assert TimingPolicy().resolve("forward", "cpu").warmup_s == 0.0
    assert TimingPolicy(warmup_s=0).resolve("forward", "cuda:0").warmup_s == 0


def test_peak_memory_is_the_steady_states_with_the_compiles_apart(monkeypatch):
    alloc = FakeAllocator().install(monkeypatch)
    memory = recording.Memory("cuda:0")
    memory.start()
    calls = []

    def call():  # the first call compiles and autotunes with 5000 bytes of workspace; serving needs 1000
        alloc.use(5000 if not calls else 1000)
        calls.append(1)

    timing.measure(call, iters=3, warmup=2, clock=FakeClock(), before_timing=memory.steady)
    rep = Repeat()
    memory.record(rep)
    # the compile's 5000 bytes stay cached: reserved, not allocated
    assert (rep.peak_mem_bytes, rep.compile_peak_mem_bytes, rep.peak_mem_reserved_bytes) == (1000, 5000, 5000)
    assert rep.peak_mem_kind == "cuda_steady" and rep.cudagraph_pool_bytes == 0


def test_energy_per_call_comes_from_the_loops_energy_over_its_calls():
    m = timing.Measurement(0, warmup.WarmUp(0, 0, warmup.FIXED), 4, 1, [10] * 4, 40, False, None, conditions=Conditions(gpu_energy_j=2.0))
    rep = Repeat()
    recording.record(rep, m, timing.HostClock(), sync_each_call=False, alone=True)
    assert rep.energy_per_call_j == 0.5 and rep.timing == "throughput"
    shared = Repeat()  # interleaved: the counter covers every variant's calls, so no figure is given
    recording.record(shared, m, timing.HostClock(), sync_each_call=True, alone=False)
    assert shared.energy_per_call_j is None and shared.timing == "latency"


def test_skipped_cuda_graphs_flag_a_cuda_graph_variant_with_inductors_reason():
    import logging

    from torch._dynamo.utils import counters

    with invariants.watch_cudagraphs(None) as seen:
        counters["inductor"]["cudagraph_skips"] += 2  # as inductor's log_cudagraph_skip_and_bump_counter does
        logging.getLogger("torch._inductor.cudagraph_utils.__cudagraphs").warning(
            "skipping cudagraphs due to mutated inputs (2 instances). Found from : \n File model.py")
    assert seen.skips == 2 and seen.reasons == ["skipping cudagraphs due to mutated inputs (2 instances)."]
    rep = Repeat()
    recording.record_cudagraphs(rep, seen, Case("m", 1, Variant("reduce-overhead"), device="cuda:0"))
    assert "cudagraphs-skipped" in rep.flags and rep.cudagraph_skip_reasons == seen.reasons
    plain = Repeat()  # default never records graphs: nothing to flag
    recording.record_cudagraphs(plain, seen, Case("m", 1, Variant("default"), device="cuda:0"))
    assert plain.flags == [] and plain.cudagraph_skips == 2
    engaged = Repeat()
    recording.record_cudagraphs(engaged, invariants.CudaGraphs(skips=0, recorded=3),
                               Case("m", 1, Variant("reduce-overhead"), device="cuda:0"))
    assert engaged.flags == [] and engaged.cudagraphs_recorded == 3
    none_recorded = Repeat()
    recording.record_cudagraphs(none_recorded, invariants.CudaGraphs(skips=0, recorded=0),
                               Case("m", 1, Variant("max-autotune"), device="cuda:0"))
    assert none_recorded.cudagraph_skip_reasons == ["inductor recorded no CUDA graph"]


def test_a_flag_reaches_the_result_the_tables_and_compare():
    import fakeresults as fr

    from compilebench.core.result import Result
    from compilebench.report import cells, compare, details as detailsmod
    from compilebench.report.view import View

    rep = Repeat(flags=["cudagraphs-skipped"], cudagraph_skip_reasons=["skipping cudagraphs due to mutated inputs"])
    rep.set_samples([1_000_000] * 3)
    rep.environment = Environment(device="cuda:0", torch="2.13")
    r = Result(Case("resnet-50", 1, Variant("reduce-overhead"), device="cuda:0"), [rep], machine_id="m")
    assert r.flags == ["cudagraphs-skipped"] and r.cudagraph_skip_reasons == rep.cudagraph_skip_reasons
    assert cells.cell(r) == "1.000 (cudagraphs-skipped)"
    details = detailsmod.details_table(View([r]))
    assert any("skipping cudagraphs due to mutated inputs" in n for n in details.notes)
    a = [fr.result("resnet-50", 1, "reduce-overhead", 5.0)]
    b = [fr.result("resnet-50", 1, "reduce-overhead", 9.0, flags=("cudagraphs-skipped",))]
    (row,) = compare.compare(a, b, "a.db", "b.db").records()
    assert row["A ms"] == "5.000" and row["B ms"] == "9.000 (cudagraphs-skipped)"


def test_sync_each_call_is_a_setting_of_the_case_and_of_its_key():
    plain, synced = Case("resnet-50", 1, Variant()), Case("resnet-50", 1, Variant(), sync_each_call=True)
    assert plain.key() != synced.key() and "sync_each_call" not in plain.key()


def test_the_worker_refuses_a_gpu_other_than_the_one_locked_for_it(monkeypatch):
    from compilebench.measure import worker

    monkeypatch.setattr(torch.cuda, "set_device", lambda device: None)
    monkeypatch.setattr(fingerprint, "collect", lambda device, **also: Environment(
        device=device, gpu_uuid="GPU-2222", hostname="h", device_name="H100", torch="2", transformers="5"))
    monkeypatch.setenv(invariants.EXPECTED_GPU, "GPU-3333")
    r = worker.run_case(Case("fault-ok", 1, Variant("eager"), device="cuda:0"), TimingPolicy(iters=2, warmup=0, min_iters=1),
                        isolation="inline", clock=FakeClock())
    assert r.status == "error"
    assert "GPU GPU-2222" in r.message and "locked GPU-3333" in r.message
    monkeypatch.setenv(invariants.EXPECTED_GPU, "GPU-2222")
    with pytest.raises(invariants.WrongDevice):
        invariants.check_device("cuda:0", "GPU-3333", "GPU-2222")
    invariants.check_device("cuda:0", "GPU-2222", "GPU-2222")
    invariants.check_device("cuda:0", None, "GPU-2222")  # nothing locked by UUID: nothing to hold it against


def test_tf32_selects_the_looser_tolerance_only_where_tf32_ran():
    from compilebench.measure import correctness

    gpu = {"device": "cuda:0", "compute_capability": "8.0", "tf32_matmul": False, "tf32_cudnn": True}
    tf32 = lambda env, dtype: Environment.from_dict(env).uses_tf32(dtype)  # noqa: E731
    assert tf32(gpu, "float32")
    assert not tf32({**gpu, "compute_capability": "7.0"}, "float32")  # V100: no TF32 math
    assert not tf32({**gpu, "tf32_cudnn": False}, "float32")
    assert not tf32(gpu, "bfloat16") and not tf32({**gpu, "device": "cpu"}, "float32")
    reference = {"logits": torch.tensor([[4.0, 1.0, 0.0]])}
    compiled = {"logits": torch.tensor([[4.02, 1.0, 0.0]])}  # 5e-3 of the largest magnitude, as TF32 fusions give
    assert correctness.check(reference, compiled, correctness.math_of("float32", False)).problems
    assert correctness.check(reference, compiled, correctness.math_of("float32", True)).ok
    assert correctness.math_of("float16", True) == "float16"


def test_default_device_is_cuda_when_available(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert devices.resolve_device(None) == "cuda:0"
    assert devices.resolve_device("cuda") == "cuda:0"
    assert devices.resolve_device("cuda:1") == "cuda:1"
    with pytest.raises(UserError, match=r"has 2 CUDA device\(s\) \(allowed: cuda:0..cuda:1\)"):
        devices.resolve_device("cuda:2")


def test_default_device_is_cpu_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert devices.resolve_device(None) == "cpu"
    with pytest.raises(UserError, match="CUDA is not available"):
        devices.resolve_device("cuda:0")


@pytest.mark.parametrize(
    "env, name",
    [
        ({"device": "cuda:0", "device_name": "NVIDIA A100-SXM4-80GB"}, "A100"),
        ({"device": "cuda:0", "device_name": "NVIDIA H100 80GB HBM3"}, "H100"),
        ({"device": "cuda:0", "device_name": "Tesla V100-SXM2-16GB"}, "V100"),
        ({"device": "cuda:0", "device_name": "Tesla T4"}, "T4"),
        ({"device": "cpu", "cpu": "AMD EPYC", "torch_threads": 2}, "CPU (AMD EPYC, 2 threads)"),
    ],
)
def test_hardware_is_named_like_the_guide(env, name):
    assert Environment.from_dict(env).hardware == name


def test_a_workers_fingerprint_takes_the_driver_from_nvml_and_the_rest_once(monkeypatch):
    """Issue 50: setup took 7-9 s a worker on an H100, nvidia-smi and package metadata among it. The driver's version
    comes from NVML, which the worker opens anyway (nvidia-smi only where NVML cannot be opened), and what cannot
    change within the process (versions, host, CPU) is collected once: a launcher's forked children inherit it."""
    import subprocess
    import types

    from compilebench.measure import conditions

    props = types.SimpleNamespace(uuid="5a7c")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device: (9, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    smi, real_run = [], subprocess.run

    def run(argv, **kw):
        if argv[0] != "nvidia-smi":  # platform asks uname
            return real_run(argv, **kw)
        smi.append(argv[0])
        return types.SimpleNamespace(stdout="550.54.15\n")

    monkeypatch.setattr(subprocess, "run", run)
    pynvml = types.SimpleNamespace(nvmlSystemGetDriverVersion=lambda: b"550.54.15")  # bytes, as older pynvml gives
    monkeypatch.setattr(conditions.Nvml, "open", classmethod(lambda cls, uuid, index: cls(pynvml, "handle", 1)))
    fingerprint.static.cache_clear()
    env = fingerprint.collect("cuda:0")
    assert env.driver == "550.54.15" and smi == [] and env.nvml is None
    assert (env.gpu_uuid, env.compute_capability, env.device_name) == ("GPU-5a7c", "9.0", "NVIDIA H100 80GB HBM3")

    def no_nvml(cls, uuid, index):
        cls.error = "pynvml is not installed (pip install compilebench[nvidia])"

    monkeypatch.setattr(conditions.Nvml, "open", classmethod(no_nvml))
    env = fingerprint.collect("cuda:0")
    assert env.driver == "550.54.15" and smi == ["nvidia-smi"] and env.nvml.startswith("pynvml is not installed")
    monkeypatch.setattr(fingerprint, "version", lambda package: pytest.fail("package metadata read again"))
    assert fingerprint.collect("cpu").torch == torch.__version__  # from the process's first collection
