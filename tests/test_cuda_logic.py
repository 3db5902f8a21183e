"""CUDA-only code paths, checked on a CPU machine with fakes: CI never has a GPU."""

import pytest
import torch

from compilebench import envinfo, timing
from compilebench.errors import UserError


class SyncCountingClock(timing.FakeClock):
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


class FakeEvent:
    log = []

    def __init__(self, enable_timing=False):
        assert enable_timing
        self.t = None

    def record(self):
        self.t = len(FakeEvent.log)
        FakeEvent.log.append(self)

    def elapsed_time(self, end):  # milliseconds, as CUDA events report
        return (end.t - self.t) * 1.5


def test_cuda_clock_times_each_iteration_with_its_own_event_pair(monkeypatch):
    FakeEvent.log = []
    syncs = []
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: syncs.append(device))
    clock = timing.CudaClock("cuda:0")
    m = timing.measure(lambda: None, iters=4, warmup=1, clock=clock)
    assert m.samples_ns == [1_500_000] * 4  # each end event recorded right after its start: 1 tick = 1.5 ms
    assert len(FakeEvent.log) == 8 and len(syncs) == 4 and set(syncs) == {"cuda:0"}
    assert clock.name == "cuda_events"


def test_default_device_is_cuda_when_available(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert envinfo.resolve_device(None) == "cuda:0"
    assert envinfo.resolve_device("cuda") == "cuda:0"
    assert envinfo.resolve_device("cuda:1") == "cuda:1"
    with pytest.raises(UserError, match=r"has 2 CUDA device\(s\) \(allowed: cuda:0..cuda:1\)"):
        envinfo.resolve_device("cuda:2")


def test_default_device_is_cpu_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert envinfo.resolve_device(None) == "cpu"
    with pytest.raises(UserError, match="CUDA is not available"):
        envinfo.resolve_device("cuda:0")


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
    assert envinfo.hardware_name(env) == name
