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
