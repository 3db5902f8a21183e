"""The traffic a service meets, as data: the input shapes it serves (a batch size, a photo size, a prompt length),
the buckets inputs are padded up to, the mix of shapes its requests follow (--mix), and the arithmetic of serving
N requests of that mix with a compile on each shape's first request. Pure: no torch, no I/O."""

from __future__ import annotations

import collections
import functools
import math
import re
from dataclasses import dataclass

from compilebench.core.errors import UserError

DYNAMIC_SETTINGS = ("auto", "true", "false", "mark")  # --dynamic: torch's automatic, True, False, mark_dynamic
DEFAULT_DYNAMIC = ("auto", "false", "mark")
DEFAULT_SHAPE_ITERS = 20  # steady calls per shape (a service's shapes, not one shape: the guide's 300 each is long)
DEFAULT_SHAPE_WARMUP = 2


@dataclass(frozen=True)
class Shape:
    """One input shape: a batch of `batch` photos resized to `image` (width, height) before the processor (a
    pipeline's images of that size), or `batch` prompts of `prompt` tokens; a pipeline's served with its LoRA
    adapter of rank `lora` swapped in first. Stored as its token: 'b4', 'b1:800x600', 'b2:p100', 'b1:512x512:r8'."""

    batch: int
    image: tuple[int, int] | None = None
    prompt: int | None = None
    lora: int | None = None

    @property
    def token(self) -> str:
        tail = f":{self.image[0]}x{self.image[1]}" if self.image else (f":p{self.prompt}" if self.prompt else "")
        return f"b{self.batch}{tail}" + (f":r{self.lora}" if self.lora else "")

    @classmethod
    def parse(cls, token: str) -> Shape:
        m = re.fullmatch(r"b(\d+)(?::(?:(\d+)x(\d+)|p(\d+)))?(?::r(\d+))?", token)
        if not m:
            raise ValueError(f"not a shape token: {token!r}")
        image = (int(m[2]), int(m[3])) if m[2] else None
        return cls(int(m[1]), image, int(m[4]) if m[4] else None, int(m[5]) if m[5] else None)

    @property
    def words(self) -> str:
        """'batch 4', 'batch 1, 800x600', 'batch 2, prompt 100', 'batch 1, 512x512, LoRA rank 8'."""
        tail = f", {self.image[0]}x{self.image[1]}" if self.image else (f", prompt {self.prompt}" if self.prompt else "")
        return f"batch {self.batch}{tail}" + (f", LoRA rank {self.lora}" if self.lora else "")

    @property
    def size(self) -> int:
        """The size a bucket pads: the prompt's length for text, else the batch."""
        return self.prompt if self.prompt else self.batch

    def padded(self, buckets: tuple[int, ...]) -> Shape:
        """The shape it is served as under --pad-to: its size up to the smallest bucket that holds it."""
        if not buckets:
            return self
        to = bucket(self.size, buckets)
        return Shape(self.batch, self.image, to, self.lora) if self.prompt else Shape(to, self.image, None, self.lora)


def bucket(size: int, buckets: tuple[int, ...]) -> int:
    fits = [b for b in buckets if b >= size]
    if not fits:
        raise ValueError(f"size {size} is larger than every bucket {buckets}")
    return min(fits)


def parse_image_size(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m or not int(m[1]) or not int(m[2]):
        raise UserError(f"--image-size {text!r}: expected WIDTHxHEIGHT in pixels, such as 800x600")
    return int(m[1]), int(m[2])


def shapes_of(batches, images=(), prompts=(), loras=()) -> tuple[Shape, ...]:
    """Every batch size at every photo size (vision) or prompt length (text), each with every LoRA adapter (a
    pipeline's, by rank), in the order given, batch first."""
    tails = [dict(image=i) for i in images] or [dict(prompt=p) for p in prompts] or [{}]
    return tuple(dict.fromkeys(Shape(b, **t, lora=r) for b in batches for t in tails for r in (loras or (None,))))


def check_pad_to(shapes: tuple[Shape, ...], buckets: tuple[int, ...]) -> None:
    for b in buckets:
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise UserError(f"--pad-to takes bucket sizes >= 1, got {b!r}")
    too_big = [s for s in shapes if buckets and s.size > max(buckets)]
    if too_big:
        what = "prompt length" if too_big[0].prompt else "batch size"
        raise UserError(f"--pad-to {' '.join(map(str, buckets))}: {what} {too_big[0].size} is larger than every bucket "
                        f"(the largest bucket must hold the largest {what})")


def names(shapes: tuple[Shape, ...]) -> dict[str, Shape]:
    """Each shape by the short name --mix gives it: what varies among the shapes ('4', '800x600', '100', or
    '4/100' where batch and prompt both vary)."""
    vary_batch = len({s.batch for s in shapes}) > 1
    vary_tail = len({(s.image, s.prompt) for s in shapes}) > 1
    out = {}
    for s in shapes:
        tail = _tail(s)
        parts = ([str(s.batch)] if vary_batch or not vary_tail else []) + ([tail] if vary_tail else [])
        out["/".join(parts)] = s
    return out


def _tail(s: Shape) -> str:
    return f"{s.image[0]}x{s.image[1]}" if s.image else str(s.prompt or "")


def parse_mix(text: str | None, shapes: tuple[Shape, ...]) -> dict[str, float]:
    """--mix '1:50,4:30,16:20' as each shape token's share of the requests (summing to 1); None: uniform. A key
    names one shape (names()), or one batch size, photo size or prompt length, whose shapes share its weight."""
    if not text:
        return {s.token: 1 / len(shapes) for s in shapes}
    named = names(shapes)
    weights: dict[str, float] = {}
    for part in text.split(","):
        key, sep, value = part.strip().rpartition(":")
        try:
            weight = float(value)
        except ValueError:
            weight = -1.0
        matched = [named[key]] if key in named else [s for s in shapes if key in (str(s.batch), _tail(s))]
        if not sep or not matched or not (weight >= 0 and math.isfinite(weight)):
            raise UserError(f"--mix {text!r}: {part.strip()!r} must be SHAPE:WEIGHT with SHAPE one of "
                            f"{', '.join(named)} and WEIGHT a number >= 0, as 1:50,4:30,16:20")
        for s in matched:
            weights[s.token] = weights.get(s.token, 0.0) + weight / len(matched)
    total = sum(weights.values())
    if total <= 0:
        raise UserError(f"--mix {text!r}: the weights add up to 0; give some shape a weight above 0")
    return {s.token: weights.get(s.token, 0.0) / total for s in shapes}


def sequence(mix: dict[str, float], n: int) -> list[str]:
    """N requests in a fixed order whose counts follow the mix as closely as any prefix can (smooth weighted
    round-robin): each shape first appears as early as its share allows, ties in the order the shapes were served."""
    return list(_sequence(tuple(mix.items()), n))


@functools.lru_cache(maxsize=8)  # every setting and process of a report weighs the same mix and N
def _sequence(mix: tuple[tuple[str, float], ...], n: int) -> tuple[str, ...]:
    credit = {t: 0.0 for t, w in mix if w > 0}
    share = dict(mix)
    out = []
    for _ in range(n):
        for t in credit:
            credit[t] += share[t]
        pick = max(credit, key=lambda t: credit[t])
        credit[pick] -= 1.0
        out.append(pick)
    return tuple(out)


@functools.lru_cache(maxsize=8)
def _counts(mix: tuple[tuple[str, float], ...], n: int) -> dict[str, int]:
    return dict(collections.Counter(_sequence(mix, n)))


@dataclass(frozen=True)
class Served:
    """One setting's costs per shape, from one process or the median of several: the first call's seconds (with
    any compile) and the steady milliseconds of each shape."""

    first_s: dict[str, float]
    steady_ms: dict[str, float]

    def cumulative(self, requests: list[str]) -> list[float]:
        """Seconds after each request of the sequence: a shape's first request pays its first call."""
        seen, total, out = set(), 0.0, []
        for t in requests:
            total += self.first_s[t] if t not in seen else self.steady_ms[t] / 1e3
            seen.add(t)
            out.append(total)
        return out

    def total_s(self, mix: dict[str, float], n: int) -> float:
        """The last of cumulative(), from the counts alone: each shape served pays its first call once."""
        return sum(self.first_s[t] + (k - 1) * self.steady_ms[t] / 1e3 for t, k in _counts(tuple(mix.items()), n).items())

    def per_request_ms(self, mix: dict[str, float]) -> float:
        return sum(w * self.steady_ms[t] for t, w in mix.items() if w > 0)


def break_even(setting: Served, eager: Served, mix: dict[str, float], horizon: int) -> int | None:
    """The fewest requests of the mix after which the setting has served everything sooner than eager, and stays
    ahead: found along the sequence up to `horizon`, then from the per-request saving (None: never)."""
    requests = sequence(mix, horizon)
    mine, theirs = setting.cumulative(requests), eager.cumulative(requests)
    ahead = None
    for i in range(len(requests) - 1, -1, -1):
        if mine[i] > theirs[i]:
            break
        ahead = i + 1
    saving_ms = eager.per_request_ms(mix) - setting.per_request_ms(mix)
    if saving_ms <= 0:  # no faster per request: ahead now (if at all), behind in the long run
        return None
    if ahead is not None:
        return ahead
    behind_s = mine[-1] - theirs[-1] if requests else 0.0
    return len(requests) + math.ceil(round(behind_s / (saving_ms / 1e3), 6))
