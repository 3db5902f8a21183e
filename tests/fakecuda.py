"""A fake of the CUDA calls compilebench's timing makes, as strict as the real API where it matters: an event
belongs to the device of the stream it was recorded on (record() without a stream takes the current stream of the
current device), elapsed_time between events of two devices or of an unrecorded event raises, and a model's work
lands on the current stream of the device its tensors live on. The device's clock moves only by the work given it."""

from __future__ import annotations


class FakeStream:
    def __init__(self, device: int):
        self.device = device
        self.t = 0.0  # ms of work queued on this stream so far

    def __repr__(self):
        return f"<stream of cuda:{self.device}>"


class FakeCuda:
    def __init__(self, devices: int = 2, current: int = 0):
        self.current = current
        self.streams = {i: FakeStream(i) for i in range(devices)}
        self.syncs: list = []
        fake = self

        class Event:
            def __init__(self, enable_timing=False):
                assert enable_timing, "an event made without enable_timing cannot be timed"
                self.device, self.t = None, None

            def record(self, stream=None):
                stream = stream if stream is not None else fake.current_stream()
                assert isinstance(stream, FakeStream), f"record() takes a stream, got {stream!r}"
                self.device, self.t = stream.device, stream.t

            def elapsed_time(self, end):
                if self.t is None or end.t is None:
                    raise RuntimeError("CUDA error: device not ready (an event was never recorded)")
                if self.device != end.device:
                    raise RuntimeError("CUDA error: events recorded on different devices")
                return end.t - self.t

        self.Event = Event

    def _index(self, device) -> int:
        if device is None:
            return self.current
        if isinstance(device, int):
            return device
        import torch

        d = torch.device(device)
        assert d.type == "cuda", d
        return d.index if d.index is not None else self.current

    def current_stream(self, device=None) -> FakeStream:
        return self.streams[self._index(device)]

    def synchronize(self, device=None):
        self.syncs.append(self._index(device))

    def set_device(self, device):
        self.current = self._index(device)

    def work(self, device: int, ms: float) -> None:
        """A model call on `device`: its kernels go to that device's current stream."""
        self.streams[device].t += ms

    def install(self, monkeypatch) -> FakeCuda:
        import torch

        for name in ("Event", "current_stream", "synchronize", "set_device"):
            monkeypatch.setattr(torch.cuda, name, getattr(self, name))
        return self


class FakeAllocator:
    """torch.cuda's caching allocator as its statistics and snapshot behave. Peaks (allocated and reserved) only rise
    with allocations, and only reset_peak_memory_stats brings them down, to what is held now. Freed blocks stay
    reserved (cached). A CUDA graph records into a private pool: its working memory is allocated there while it is
    captured, then freed back to the pool, which keeps it reserved and counts it free, though every replay writes
    into it without the allocator knowing. memory_snapshot() lists segments with their device and pool id, (0, 0)
    for the default pool, as torch's does."""

    DEFAULT = (0, 0)

    def __init__(self, device: int = 0):
        self.device = device
        self.allocated = self.peak = 0
        self.reserved = self.reserved_peak = 0
        self.pools: dict[tuple[int, int], list[int]] = {}  # private pool id -> [reserved, allocated]

    def malloc(self, n: int, pool: tuple[int, int] | None = None) -> None:
        if pool is None:
            cached = self.reserved - self.allocated - sum(r - a for r, a in self.pools.values())
            self.reserved += max(0, n - cached)
        else:
            held = self.pools.setdefault(pool, [0, 0])
            grow = max(0, n - (held[0] - held[1]))
            held[0] += grow
            held[1] += n
            self.reserved += grow
        self.allocated += n
        self.peak, self.reserved_peak = max(self.peak, self.allocated), max(self.reserved_peak, self.reserved)

    def free(self, n: int, pool: tuple[int, int] | None = None) -> None:
        self.allocated -= n
        if pool is not None:
            self.pools[pool][1] -= n

    def use(self, n: int) -> None:
        """Hold exactly n bytes in the default pool (what a call needs while it runs)."""
        now = self.allocated - sum(a for _, a in self.pools.values())
        self.malloc(n - now) if n > now else self.free(now - n)

    def record_graph(self, pool: tuple[int, int], working: int, outputs: int) -> None:
        """Capture a CUDA graph into `pool`: its working memory and outputs allocated there, the working memory then
        freed back to the pool (the outputs stay live, as cudagraph trees keep them)."""
        self.malloc(working + outputs, pool)
        self.free(working, pool)

    def reset_peak_memory_stats(self, device=None) -> None:
        self.peak, self.reserved_peak = self.allocated, self.reserved

    def memory_snapshot(self) -> list[dict]:
        private_reserved = sum(r for r, _ in self.pools.values())
        private_allocated = sum(a for _, a in self.pools.values())
        segments = [{"device": self.device, "address": 0, "segment_pool_id": self.DEFAULT,
                     "total_size": self.reserved - private_reserved, "allocated_size": self.allocated - private_allocated,
                     "active_size": self.allocated - private_allocated, "blocks": []}]
        for i, (pool, (reserved, allocated)) in enumerate(self.pools.items()):
            segments.append({"device": self.device, "address": (i + 1) << 32, "segment_pool_id": pool,
                             "total_size": reserved, "allocated_size": allocated, "active_size": allocated, "blocks": []})
        return segments

    def install(self, monkeypatch) -> FakeAllocator:
        import torch

        monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", self.reset_peak_memory_stats)
        monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: self.peak)
        monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda device=None: self.reserved_peak)
        monkeypatch.setattr(torch.cuda, "memory_snapshot", self.memory_snapshot)
        return self


class FakeGraphs:
    """torch.cuda's graph capture as strict as the real API where a hand-made capture goes wrong: a capture
    (torch.cuda.graph) runs its body once and records the kernels launched in it; a replay runs those kernels on the
    memory they were recorded with (nothing a Python call does between replays reaches them: new inputs count only
    when copied into the captured ones), never Python. A library's lazy first-call work (a cuBLAS handle, cuDNN's
    workspace) may not happen inside a capture: a model whose first call was not made before capture, on a stream
    other than the default one, fails as the real capture fails. Synchronizing inside a capture fails; replaying
    before capturing fails; a graph captures once. A FakeGraphModel's forward launches its kernels through `launch`."""

    def __init__(self):
        self.capturing = None  # the graph being captured
        self.current = "default"  # the stream work goes to
        self.warmed_on: set[str] = set()  # streams a model has been called on outside a capture
        fake = self

        class Stream:
            def __init__(self, device=None, priority=0):
                self.name = f"side{id(self)}"

            def wait_stream(self, other):
                pass

        class CUDAGraph:
            def __init__(self):
                self.kernels, self.captured = None, False

            def replay(self):
                if not self.captured:
                    raise RuntimeError("CUDA error: replay of a graph that was never captured")
                for k in self.kernels:
                    k()

        class graph:
            def __init__(self, g, pool=None, stream=None):
                self.g = g

            def __enter__(self):
                if self.g.captured:
                    raise RuntimeError("a CUDAGraph captures once")
                fake.capturing, self.g.kernels = self.g, []
                return self.g

            def __exit__(self, *exc):
                fake.capturing, self.g.captured = None, exc[0] is None
                return False

        self.Stream, self.CUDAGraph, self.graph = Stream, CUDAGraph, graph
        self.default_stream = Stream()
        self.default_stream.name = "default"

    def current_stream(self, device=None):
        return self.default_stream if self.current == "default" else self._streams[self.current]

    def stream(self, s):
        import contextlib

        @contextlib.contextmanager
        def on():
            before, self.current = self.current, s.name
            self._streams = {**getattr(self, "_streams", {}), s.name: s}
            try:
                yield
            finally:
                self.current = before
        return on()

    def synchronize(self, device=None):
        if self.capturing is not None:
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    def launch(self, kernel) -> None:
        """A kernel: run now, and recorded into the graph being captured."""
        if self.capturing is not None:
            if not self.warmed_on - {"default"}:
                raise RuntimeError("CUDA error: operation not permitted when stream is capturing (a library's "
                                   "first-call initialization inside a capture: warm up on a side stream first)")
            self.capturing.kernels.append(kernel)
        else:
            self.warmed_on.add(self.current)
        kernel()

    def install(self, monkeypatch) -> FakeGraphs:
        import torch

        for name in ("Stream", "CUDAGraph", "graph", "current_stream", "stream", "synchronize"):
            monkeypatch.setattr(torch.cuda, name, getattr(self, name))
        return self


class FakeGraphModel:
    """y = 2x + 1 on static memory, as a GPU model's kernels are: its output buffer allocated once per call outside
    a capture, and each op a kernel launched through the fake. `calls` counts Python calls of forward."""

    def __init__(self, fake: FakeGraphs):
        self.fake, self.calls = fake, 0

    def __call__(self, pixel_values):
        import torch

        self.calls += 1
        out = torch.empty_like(pixel_values)
        self.fake.launch(lambda: torch.mul(pixel_values, 2, out=out))
        self.fake.launch(lambda: out.add_(1))
        return {"logits": out}
