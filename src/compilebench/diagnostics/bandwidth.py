"""How close to the hardware: the bytes a call must move, and what this machine can move and compute.

- A decode step of text generation must read every weight once (at the case's dtype; of the input embedding
  table only the rows of the tokens it embeds, unless the output layer shares it) and the KV cache of every
  position so far: bytes per step over time per token is the bandwidth it reached (gpt-fast's GB/s).
- A forward pass: the bytes its operators read and write, counted eagerly (each operator reads its inputs and
  writes its outputs: no fusion), and for a compiled model the bytes inductor's kernels access by inductor's own
  count. FLOPs over bytes is its arithmetic intensity; against the machine's ridge point (peak FLOP/s over peak
  bandwidth) it says whether the model is memory- or compute-bound.
- A CPU has no datasheet here: a short streaming copy and a matmul measured on the machine stand for its peaks,
  recorded in the env of the first worker of a run on it (after its timed loop: they never share the machine
  with one)."""

from __future__ import annotations

import contextlib
import functools
import logging
import time

STREAM_BYTES = 256 * 2 ** 20  # per buffer: well past a CPU's last-level cache
STREAM_TRIES = 5
MATMUL_MIN_N, MATMUL_MAX_N = 512, 2048  # square matmuls, doubled until one takes MATMUL_MIN_S
MATMUL_MIN_S = 0.005
MATMUL_TRIES = 3
# inductor counts the bytes its kernels access only while this logger is enabled for INFO
_INDUCTOR_METRICS_LOG = "torch._inductor.compile_fx.__inductor_metrics"


def stored_bytes(tensor) -> int:
    """The bytes a tensor holds: a tensor subclass (torchao's quantized weights) by the tensors it is made of."""
    if hasattr(tensor, "__tensor_flatten__"):
        return sum(stored_bytes(getattr(tensor, name)) for name in tensor.__tensor_flatten__()[0])
    return tensor.numel() * tensor.element_size()


def weight_bytes(model) -> int:
    """The model's parameters and buffers as stored (a tied weight once; quantized ones as their parts)."""
    tensors = {id(t): t for t in (*model.parameters(), *model.buffers())}
    return sum(stored_bytes(t) for t in tensors.values())


def decode_bytes(model, batch_size: int, prompt_len: int, new_tokens: int) -> dict | None:
    """The bytes one decode step must read, on average over the steps of a generate() call: the weights and the KV
    cache at its mean length (step i of new_tokens - 1 attends to prompt_len + i positions). None where the
    model's config does not name its layers and heads as transformers' decoders do."""
    try:
        return _decode_bytes(model, batch_size, prompt_len, new_tokens)
    except (AttributeError, TypeError, StopIteration):
        return None


def _decode_bytes(model, batch_size: int, prompt_len: int, new_tokens: int) -> dict:
    params = {id(p): p for p in model.parameters()}.values()  # a shared (tied) weight is read once
    weights = sum(stored_bytes(p) for p in params)  # quantized weights as stored
    embedding, output = model.get_input_embeddings(), model.get_output_embeddings()
    if embedding is not None and (output is None or output.weight is not embedding.weight):
        table = embedding.weight
        weights -= stored_bytes(table)  # only the looked-up rows are read
        weights += batch_size * table.shape[1] * table.element_size()
    text = model.config.get_text_config(decoder=True)
    heads = getattr(text, "num_key_value_heads", None) or text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    element = embedding.weight.element_size() if embedding is not None else next(iter(params)).element_size()
    per_position = 2 * text.num_hidden_layers * heads * head_dim * element  # a key and a value per layer
    mean_len = prompt_len + new_tokens / 2
    kv = batch_size * per_position * mean_len
    return {"weights": int(weights), "kv_cache": int(kv), "per_step": int(weights + kv), "mean_len": mean_len}


class BytesCounter:
    """A dispatch mode that adds up the bytes every operator reads (its tensor inputs) and writes (its outputs),
    each tensor once per operator; views move nothing and are not counted."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        counter = self

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                if not func.is_view:
                    counter.total += _tensor_bytes((args, kwargs, out))
                return out

        self.total = 0
        self._mode = _Mode()

    def __enter__(self):
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self._mode.__exit__(*exc)


def _tensor_bytes(tree) -> int:
    import torch
    from torch.utils._pytree import tree_leaves

    seen, total = set(), 0
    for t in tree_leaves(tree):
        if isinstance(t, torch.Tensor) and id(t) not in seen:
            seen.add(id(t))
            total += t.numel() * t.element_size()
    return total


@contextlib.contextmanager
def inductor_bytes():
    """Inductor's count of the bytes its kernels access, over the graphs compiled inside the block (a cold compile:
    a graph loaded from the cache is not counted): yields a dict whose "bytes" is set on exit (None: none compiled)."""
    from torch._inductor import metrics

    log = logging.getLogger(_INDUCTOR_METRICS_LOG)
    saved = log.level, log.propagate
    log.setLevel(logging.INFO)
    log.propagate = False  # counted, never printed
    null = logging.NullHandler()
    log.addHandler(null)
    metrics.num_bytes_accessed = 0
    found: dict = {"bytes": None}
    try:
        yield found
    finally:
        found["bytes"] = metrics.num_bytes_accessed or None
        log.removeHandler(null)
        log.setLevel(saved[0])
        log.propagate = saved[1]


@functools.lru_cache(maxsize=None)  # once per process and dtype: the machine does not change between cases
def host_peaks(dtype: str) -> dict:
    """This CPU's streaming bandwidth (the best of a few copies of a buffer larger than its caches: bytes read plus
    bytes written) and its matmul rate in the case's dtype, as stand-ins for the peaks a datasheet would give."""
    import torch

    best = _best_copy_s(torch)
    kind, n = getattr(torch, dtype), MATMUL_MIN_N
    while True:  # a size whose product takes long enough to time, and no longer (float16 crawls on most CPUs)
        a = torch.randn(n, n).to(kind)
        a @ a  # the first call picks its kernel
        mm = min(_timed(lambda: a @ a) for _ in range(MATMUL_TRIES))
        if mm >= MATMUL_MIN_S or n >= MATMUL_MAX_N:
            break
        n *= 2
    return {"stream_gbs": round(2 * STREAM_BYTES / best / 1e9, 2), "matmul_gflops": round(2 * n ** 3 / mm / 1e9, 1)}


def _best_copy_s(torch) -> float:
    src = torch.ones(STREAM_BYTES // 4)
    dst = torch.zeros_like(src)  # touched: the copies time memory, not page faults
    return min(_timed(lambda: dst.copy_(src)) for _ in range(STREAM_TRIES))


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def intensity(flops: int | None, moved: int | None) -> float | None:
    """FLOPs per byte moved."""
    return flops / moved if flops and moved else None


def bound(flops: int | None, moved: int | None, peak_flops: float | None, peak_bytes_per_s: float | None) -> str | None:
    """'memory' below the ridge point (peak FLOP/s over peak bytes/s), 'compute' above it, None where unknown."""
    ai = intensity(flops, moved)
    if ai is None or not peak_flops or not peak_bytes_per_s:
        return None
    return "memory" if ai < peak_flops / peak_bytes_per_s else "compute"
