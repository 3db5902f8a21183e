"""`compilebench check CANDIDATE.db --baseline BASELINE.db`: a regression gate for CI. For every case both files
hold, each metric of the candidate against the baseline, and a regression where the candidate is worse beyond
that metric's limit: latency and speed-up over eager by their intervals (widened by the run-to-run drift, as two
files are two runs), compile time by value beyond how far one cold compile of a case moves from another on the
machine (one compile per result: no interval to read), peak memory by its processes' peaks, a quantized
case's quality against its float model by value, and a case that was ok and no longer is, always. Cases on one
side only are listed, never a failure, and never counted as checked; two sides without a case in common are an
error (a gate that compared nothing must not pass). Out: a table, markdown for a CI summary, JUnit XML for CI
systems to list."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from xml.etree import ElementTree

from compilebench.core import drift as driftmod, generation, pairing, sequential, speedups, stats
from compilebench.core.drift import Drift
from compilebench.core.errors import UserError
from compilebench.core.result import Result
from compilebench.core.speedups import Speedup
from compilebench.core.vocab import Verdict
from compilebench.report import compare, data
from compilebench.report.cells import Table, interval, num, verdict


@dataclass(frozen=True)
class Limits:
    """How much worse a metric may get before it is a regression (fractions)."""

    slowdown: float = 0.05  # latency, and the speed-up over eager
    compile_increase: float = 0.15
    memory_increase: float = 0.10
    quality_drop: float = 0.01  # --quantize: a quality measure's agreement with float, in points (0.99 to 0.97 fails)


ONE_SIDE = "case"  # the metric of a line whose case only one side holds: listed, never compared


@dataclass(frozen=True)
class Line:
    """One case and metric: both sides, the candidate over the baseline, and whether it regressed."""

    label: str  # the case in words
    metric: str
    baseline: str
    candidate: str
    ratio: float | None  # candidate / baseline: above 1 is worse for times, compile and memory, better for speed-up
    low: float | None
    high: float | None
    verdict: str
    regression: bool
    why: str
    # why it could not be decided: its interval reaches beyond the limit on the worse side without lying beyond it
    # (a regression it can neither call nor rule out); "" where decided
    undecided: str = ""


def check(baseline: list[Result], candidate: list[Result], limits: Limits = Limits(),
          min_effect: float = stats.DEFAULT_MIN_EFFECT, drift: Drift | None = None) -> tuple[list[Line], Drift | None]:
    """Every case and metric, and the drift verdicts across runs held (None where every pair came from one run);
    `drift` None: estimated from both files' history (the candidate's results checked left out), else the
    default."""
    stats.check_min_effect(min_effect)
    base = compare.one_per_case(baseline, "the baseline", "--machine", "--baseline-env")
    cand = compare.one_per_case(candidate, "the candidate", "--machine", "--candidate-env")
    # from the files' history of runs, the candidates checked left out: their moves are what the gate asks about
    moved = drift or driftmod.estimate([*baseline, *candidate], under_test=cand.values())
    compiles = driftmod.estimate([*baseline, *candidate], lambda r: r.compile_s, driftmod.COMPILE_DEFAULT,
                                 cand.values())
    if (unfit := compare.incomparable(base, cand, "the baseline", "the candidate")) is not None:
        raise UserError(f"nothing to check: {unfit}")  # a gate that compared nothing must not pass
    lines: list[Line] = []
    used: Drift | None = None
    paired = pairing.Pairing(base.values()), pairing.Pairing(cand.values())
    for key in dict.fromkeys([*base, *cand]):
        b, c = base.get(key), cand.get(key)
        label = _label(b or c)
        if b is None or c is None:
            lines.append(Line(label, ONE_SIDE, _status(b), _status(c), None, None, None, "", False,
                              "only in the " + ("candidate" if b is None else "baseline")))
            continue
        if b.status == "ok" and c.status != "ok":
            lines.append(Line(label, "status", "ok", c.status, None, None, None, "", True,
                              f"was ok, now {c.status}" + (f": {c.message}" if c.message else "")))
            continue
        if b.status != "ok" or c.status != "ok":
            lines.append(Line(label, "status", b.status, c.status, None, None, None, "", False, "not ok in the baseline"))
            continue
        across = moved if driftmod.across_runs(b, c, unknown=True) else None
        used = used or across
        lines.append(_latency(label, b, c, limits, min_effect, across))
        if b.case.generation:  # its verdict's figure too: a slower decode that the prefill's noise would hide
            lines += filter(None, [_latency(label, b, c, limits, min_effect, across, generation.PER_TOKEN)])
        lines += _speedup(label, b, c, *paired, limits, min_effect, across)
        lines += _compile(label, b, c, limits.compile_increase, compiles)
        lines += _memory(label, b, c, limits)
        lines += _quality(label, b, c, limits)
    return lines, used


def _quality(label, b: Result, c: Result, limits: Limits) -> list[Line]:
    """A quantized case's agreement with its float model (--quantize), each measure both sides hold by value: one
    input, seeded weights, so a drop is the quantization's (or the kernels') and no noise to read an interval of."""
    out = []
    for name in (n for n in b.quality if n in c.quality and n != "first_divergence"):
        was, now = b.quality[name], c.quality[name]
        worse = was - now > limits.quality_drop
        out.append(Line(label, f"quality {name}", f"{was:.1%}", f"{now:.1%}", now / was if was else None, None, None,
                        "by value", worse, f"fell more than {limits.quality_drop * 100:g} point(s)" if worse else ""))
    return out


def _memory(label, b: Result, c: Result, limits: Limits) -> list[Line]:
    """Peak memory, where both sides measured it the same way (a CUDA graph's pool counted in one and not the other,
    results written before the pools were counted, would read as a rise): each process's peak, the candidate's over
    the baseline's with their interval between processes (log space), a regression where the whole interval lies
    beyond the limit. A GPU allocator's peak is the same in every process, so its interval is the value; a CPU's
    peak RSS is not (the quick suite's DETR: 1,086 to 1,278 MiB over three processes of one run), and by value a
    rise within that spread failed the gate. One process a side: by value."""
    pb, pc = data.process_peaks(b), data.process_peaks(c)
    if not pb or not pc:
        return []
    was, now = stats.estimate(pb)[0], stats.estimate(pc)[0]
    read = data.memory_ratio(b, c)  # the one rule the tables and the suite read
    if read is None:
        why = (f"measured as {b.peak_mem_kind}, then as {c.peak_mem_kind}" if b.peak_mem_kind != c.peak_mem_kind
               else "measured in the same processes")
        return [Line(label, "peak memory MiB", num(was / 2 ** 20, 1), num(now / 2 ** 20, 1), None, None,
                     None, "", False, f"not compared: {why}")]
    ratio, low, high = read
    if low is None:
        return _by_value(label, "peak memory MiB", was, now, limits.memory_increase, 1, 2 ** 20)
    limit = 1 + limits.memory_increase
    up, reaches = low > limit, high > limit
    return [Line(label, "peak memory MiB", num(was / 2 ** 20, 1), num(now / 2 ** 20, 1), ratio, low, high,
                 "between processes", up, f"up more than {limits.memory_increase:.0%}" if up else "",
                 "" if up or not reaches else (
                     f"{ratio:.2f}x [{low:.2f}-{high:.2f}]: its processes' peaks spread too far to tell it from "
                     f"{limits.memory_increase:.0%} more; more repeats a side can"))]


def _latency(label, b: Result, c: Result, limits: Limits, min_effect: float, across: Drift | None,
             metric=None) -> Line | None:
    """The candidate's time over the baseline's: whole calls, or (`metric`: generation.PER_TOKEN) decoded tokens
    (None where a side has none: results from before they were recorded)."""
    s = speedups.speedup(b, c, min_effect, metric, across)  # baseline time over the candidate's
    if s is None:
        return None
    slower = Verdict.of(s.low, s.high, limits.slowdown) == Verdict.slower
    name, was, now = (("latency ms", b.mean, c.mean) if metric is None else
                      ("ms per token", b.generation.per_token.mean, c.generation.per_token.mean))
    return Line(label, name, f"{was:.3f}", f"{now:.3f}", 1 / s.value, _inv(s.high), _inv(s.low),
                verdict(s), slower, f"slower beyond {limits.slowdown:.0%}" if slower else "",
                "" if slower else _undecided(s.value, s.low, limits, across, "slower", "faster",
                                             speedups.out_of_reach(s, min_effect)))


def _speedup(label, b: Result, c: Result, base: pairing.Pairing, cand: pairing.Pairing, limits: Limits,
             min_effect: float, across: Drift | None) -> list[Line]:
    """A compiled case's speed-up over its own file's eager baseline (core/pairing.py, as every report reads it),
    the candidate's against the baseline's."""
    if not pairing.compared(b):
        return []
    metric = generation.verdict_metric(b.case)
    sb, sc = (speedups.speedup(side.of(r), r, min_effect, metric) for side, r in ((base, b), (cand, c)))
    if sb is None or sc is None:
        return []
    ratio, low, high = _ratio_of(sb, sc, across)
    worse = Verdict.of(low, high, limits.slowdown) == Verdict.slower
    said = Verdict.of(low, high, min_effect)
    name = f"speed-up over eager{generation.per(b.case)}"
    return [Line(label, name, f"{sb.value:.2f}x", f"{sc.value:.2f}x", ratio, low, high,
                 f"{said} (across runs)" if across else said, worse,
                 f"speed-up fell beyond {limits.slowdown:.0%}" if worse else "",
                 "" if worse else _undecided(ratio, low, limits, across, "lower", "higher",
                                             _reach(sb, sc, (ratio, low, high), said, min_effect, across)))]


def _reach(sb: Speedup, sc: Speedup, read: tuple, said: Verdict, min_effect: float, across: Drift | None) -> str:
    """What the ratio of two speed-ups could see, as a latency's reading says it (speedups.out_of_reach): its reach,
    and about how many more processes a side would decide it, at both sides' fewer processes and degrees of
    freedom (each side's half-width shrinks alike as both grow, so theirs in quadrature does too); `read`: the
    ratio and its interval, widened by `across` where the files are different runs (more processes do not shrink
    that part)."""
    ratio, low, high = read
    reach = sequential.reach(low, high)
    if reach is None:
        return ""
    fewer = min((sb, sc), key=lambda s: (s.n or 0, s.df or 0))
    both = Speedup(ratio, low, high, said, paired=False, drift=across.value if across else None,
                   confidence=max(sb.confidence, sc.confidence), n=fewer.n, df=fewer.df)
    return (speedups.out_of_reach(both, min_effect, "its")
            or f"differences under ±{reach:.0%} are out of its reach")  # decided by --min-effect, not by the limit


def _undecided(value: float, low: float | None, limits: Limits, across: Drift | None, worse: str, better: str,
               reach: str = "") -> str:
    """Why a metric whose `value` is better above 1 (with the low end of its interval) was not decided: its
    interval reaches beyond the limit on the worse side; "" where it does not (decided: no regression)."""
    if low is not None and low >= 1 / (1 + limits.slowdown):
        return ""
    return compare.undecided(f"{1 / value:.2f}x {worse}" if value < 1 else f"{value:.2f}x {better}", across, reach)


def _ratio_of(sb: Speedup, sc: Speedup, across: Drift | None) -> tuple[float, float | None, float | None]:
    """The candidate's speed-up over the baseline's, its interval from both intervals (independent: their log
    half-widths add in quadrature), widened by the drift where the files are different runs."""
    ratio = sc.value / sb.value
    if None in (sb.low, sb.high, sc.low, sc.high):
        return ratio, None, None
    half = math.hypot(math.log(sb.high / sb.low) / 2, math.log(sc.high / sc.low) / 2)
    widen = 1 + across.value if across else 1.0
    return ratio, ratio * math.exp(-half) / widen, ratio * math.exp(half) * widen


def _by_value(label, metric: str, b: float | None, c: float | None, limit: float, digits: int, unit: float) -> list[Line]:
    if b is None or c is None or b <= 0:
        return []
    ratio = c / b
    worse = ratio > 1 + limit
    return [Line(label, metric, num(b / unit, digits), num(c / unit, digits), ratio, None, None, "by value", worse,
                 f"up more than {limit:.0%}" if worse else "")]


def _compile(label, b: Result, c: Result, limit: float, noise: Drift) -> list[Line]:
    """Compile seconds by value: a regression where they rose beyond the limit and beyond `noise`, how far one cold
    compile of a case moves from another on the machine (the quick suite's moved 18-23% between two runs of one
    night on this project's VM: a 15% limit alone failed the gate on noise); a rise beyond the limit within it is
    undecided."""
    lines = _by_value(label, "compile s", b.compile_s, c.compile_s, limit, 1, 1)
    if not lines or not lines[0].regression:
        return lines
    line = lines[0]
    if line.ratio > 1 + noise.value:
        return [dataclasses.replace(line, why=f"up more than {limit:.0%}, and beyond how far one cold compile moves "
                                              f"from another here, {noise.describe()}")]
    return [dataclasses.replace(line, regression=False, why="", undecided=(
        f"up {line.ratio - 1:.0%}, within how far one cold compile moves from another here, {noise.describe()}: "
        "one compile a side cannot tell it; `compilebench history` over several runs of each side can"))]


def _label(r: Result) -> str:
    return f"{r.label or r.case.model} b{r.case.batch_size} {data.with_settings(r.case.variant.label, data.settings(r))}"


def _status(r: Result | None) -> str:
    return "" if r is None else r.status


def _inv(x: float | None) -> float | None:
    return None if x is None else 1 / x


def table(lines: list[Line], title: str) -> Table:
    return Table(title, ["case", "metric", "baseline", "candidate", "candidate/baseline", "95% CI", "verdict", "result"],
                 [[l.label, l.metric, l.baseline, l.candidate, num(l.ratio, 3), interval(l.low, l.high, "{:.3f}"),
                   l.verdict, _result(l)] for l in lines])


def _result(l: Line) -> str:
    return f"REGRESSION: {l.why}" if l.regression else f"UNDECIDED: {l.undecided}" if l.undecided else l.why or "ok"


def summary(lines: list[Line], unit: str = "case(s)") -> str:
    """The gate's sentence: regressions, and cases undecided apart (never counted among those without one), and
    cases on one side only apart (not compared: never counted as without a regression)."""
    one_side = list(dict.fromkeys(l.label for l in lines if l.metric == ONE_SIDE))
    labels = [label for label in dict.fromkeys(l.label for l in lines) if label not in one_side]
    bad = list(dict.fromkeys(l.label for l in lines if l.regression))
    undecided = [l for l in lines if l.undecided and l.label not in bad]
    open_ = list(dict.fromkeys(l.label for l in undecided))
    fine = len(labels) - len(bad) - len(open_)
    said = [f"{len(bad)} regression(s) in {len(labels)} {unit}"] if bad else \
        [f"no regression in {fine} {unit}"] if fine or not open_ else []
    if open_:
        across = all("drift" in l.undecided for l in undecided)
        said.append(f"{len(open_)} {unit} undecided{' across runs' if across else ''} ("
                    + "; ".join(f"{l.label}, {l.metric}: {l.undecided}" for l in undecided) + ")")
    if one_side:
        said.append(f"{len(one_side)} {unit} on one side only, not compared")
    return "; ".join(said)


def junit(lines: list[Line]) -> str:
    """JUnit XML: one test case per case and metric, a regression its failure."""
    suite = ElementTree.Element("testsuite", name="compilebench check", tests=str(len(lines)),
                                failures=str(sum(l.regression for l in lines)),
                                skipped=str(sum(bool(l.undecided) or (l.metric == ONE_SIDE) for l in lines)))
    for l in lines:
        case = ElementTree.SubElement(suite, "testcase", classname=l.label, name=l.metric)
        if l.regression:
            failure = ElementTree.SubElement(case, "failure", message=l.why)
            failure.text = f"baseline {l.baseline}, candidate {l.candidate}, candidate/baseline {num(l.ratio, 3)}"
        elif l.undecided:  # neither a pass nor a failure: what it would take to decide
            ElementTree.SubElement(case, "skipped", message=f"undecided: {l.undecided}")
        elif l.metric == ONE_SIDE:
            ElementTree.SubElement(case, "skipped", message=l.why)
    return ElementTree.tostring(ElementTree.ElementTree(suite).getroot(), encoding="unicode", xml_declaration=True)
