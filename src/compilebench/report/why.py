"""Why it is (not) faster: where each call's time goes (--profile), what the compiler did (its phases, the graph
breaks and recompiles of the whole run, --compile-trace's logs), and how close to the hardware each case ran
(bytes moved against the machine's peaks: memory- or compute-bound, decode GB/s)."""

from __future__ import annotations

from compilebench.core.result import Result
from compilebench.core.why import Profile
from compilebench.diagnostics import bandwidth, profiling
from compilebench.report import data, drawing
from compilebench.report.cells import Table, table
from compilebench.report.drawing import Chart
from compilebench.report.view import View

TOP_SHOWN = 5  # operators named in a row of the where-the-time-goes table (the trace has them all)


def _order(r: Result) -> tuple:
    return r.case.batch_size, r.case.variant.order, r.case.variant.label, r.case.environment or ""


def profiled(view: View) -> list[tuple[str, str, list[Result]]]:
    """(hardware, model label, its profiled results in table order), per model measured with --profile."""
    results = [r for r in view.latest if r.profile.shares_ms]
    out = []
    for hw in dict.fromkeys(data.hardware(r) for r in results):
        mine = [r for r in results if data.hardware(r) == hw]
        for model in data.model_order(mine):
            rows = sorted((r for r in mine if r.case.model == model), key=_order)
            out.append((hw, data.model_label(mine, model), rows))
    return out


def title(label: str, hw: str) -> str:
    return f"Where the time goes: {label}, {hw}"


def _ms_share(p: Profile, share: str) -> str:
    ms, wall = p.shares_ms[share], p.wall_ms
    return f"{ms:.3f} ({ms / wall:.0%})" if wall else f"{ms:.3f}"


def _top(p: Profile) -> str:
    named = [t for t in p.top if t.share is not None][:TOP_SHOWN]
    return "; ".join(f"{t.name} {t.self_ms:.3f}" for t in named)


def variant_label(r: Result) -> str:
    return data.in_environment(data.with_settings(r.case.variant.label, data.settings(r)), r)


def time_tables(view: View) -> list[Table]:
    """Per model: each profiled case's call split into matmul/conv, other kernels and the time outside them, with
    its operator calls (and GPU kernels) and top operators per call, eager and compiled side by side."""
    out = []
    for hw, label, rows in profiled(view):
        gpu = any(r.profile.kernels is not None for r in rows)
        columns = [
            ("Batch", lambda r: str(r.case.batch_size)),
            ("Variant", variant_label),
            ("ms per call (profiled)", lambda r: f"{r.profile.wall_ms:.3f}"),
            *[(f"{share} ms (share)", lambda r, s=share: _ms_share(r.profile, s)) for share in profiling.SHARES],
            ("operator calls per call", lambda r: f"{r.profile.op_calls:.0f}"),
            *([("GPU kernels per call", lambda r: f"{r.profile.kernels:.0f}")] if gpu else []),
            (f"top {TOP_SHOWN} by own time (ms per call)", lambda r: _top(r.profile)),
            ("trace", lambda r: r.profile.trace or ""),
        ]
        notes = [f"- {r.case.describe()}: {r.profile.problem}" for r in rows if r.profile.problem]
        out.append(_linked(table(title(label, hw), columns, rows, notes)))
    return out


PROFILE_NOTE = ("Each profile is a separate pass of a few calls after the timed loop (profiling slows calls down: "
                "compare shares, not milliseconds, with the tables above). On a GPU the shares are the device's kernel "
                "time and the rest of the timed loop's time per call (the device waiting for the host), so the "
                "profiler's own slowing of the host is not counted as overhead; on a CPU, the operators' own time: "
                "inductor's generated C++ kernels have no event of their own and count as the compiled graph's call. "
                "Open a trace in chrome://tracing or https://ui.perfetto.dev.")


def _linked(t: Table) -> Table:
    t.links = ("trace", "compile trace")
    return t


def _phase(r: Result, name: str) -> str:
    value = getattr(r.compile_phases, name)
    return "" if value is None else f"{value:.2f}"


def _compile_trace(r: Result) -> str:
    return r.compile_trace.shown or ""


def _explained(view: View) -> list[Result]:
    """The compiled results that recorded their compile phases (every one measured since they were: an older file
    reports as it did)."""
    return [r for r in view.latest if r.case.variant.compiled and (r.compile_phases or r.compile_trace)]


CPU_CHECKS = ("CPU checks: part of inductor's phase, its checks of which vector instruction sets this CPU runs (a "
              "small library built per set into the compiler's cache, and loaded in a new Python process), once a "
              "process. A cold compile starts from an empty compiler state and builds them; a process on a machine "
              "that has compiled before (its cache holds them) skips the builds and only loads them: a cost of the "
              "machine's, not of the model.")


def compiler_table(view: View) -> Table | None:
    """What the compiler did for each compiled case: its compile seconds split into phases, graphs, graph breaks,
    recompiles, the blocks a regional compile compiled and the frames past the recompile limit (where any case
    has them), and the compile trace kept with --compile-trace."""
    rows = sorted(_explained(view), key=lambda r: (data.hardware(r), r.label, *_order(r)))
    if not rows:
        return None
    checked = any(r.compile_phases.cpu_checks_s for r in rows)  # a CPU's compiles, timed since 2026-11-29
    columns = [
        ("Task/Model", lambda r: r.label),
        ("Batch", lambda r: str(r.case.batch_size)),
        ("Variant", variant_label),
        ("compile s", lambda r: "" if r.compile_s is None else f"{r.compile_s:.2f}"),
        ("dynamo s", lambda r: _phase(r, "dynamo_s")),
        ("AOT autograd s", lambda r: _phase(r, "aot_s")),
        ("inductor s", lambda r: _phase(r, "inductor_s")),
        ("of it code generation s", lambda r: _phase(r, "codegen_s")),
        *([("of it CPU checks s", lambda r: _phase(r, "cpu_checks_s"))] if checked else []),
        ("graphs", lambda r: "" if r.graphs is None else str(r.graphs)),
        ("graph breaks", lambda r: "" if r.graph_breaks is None else str(r.graph_breaks)),
        ("recompiles", lambda r: str(len(r.recompile_reasons))),
        *([("blocks compiled (regions)", lambda r: ", ".join(f"{n} {k}" for k, n in r.regions.items()))]
          if any(r.regions for r in rows) else []),
        *([("frames past the recompile limit", lambda r: str(r.recompile_limit_hits or 0))]
          if any(r.recompile_limit_hits for r in rows) else []),
        ("compile trace", _compile_trace),
    ]
    missing = sorted({r.compile_trace.why_not for r in rows if r.compile_trace.why_not})
    notes = ["The phases are dynamo's own compilation metrics, summed over the graphs compiled: dynamo's tracing, "
             "AOT autograd, inductor (code generation is part of inductor's). A warm compile's inductor phase is "
             "mostly cache reads. A compile traced with --compile-trace takes longer for the writing.",
             *([CPU_CHECKS] if checked else []),
             *[f"- compile trace without HTML: {why}" for why in missing]]
    return _linked(table("What the compiler did", columns, rows, notes))


def reason_tables(view: View) -> list[Table]:
    """The graph-break and recompile reasons of the whole run, most common first, with the models each hit."""
    out = []
    for what, reasons_of in (("Graph breaks", lambda r: r.break_reasons), ("Recompiles", lambda r: r.recompile_reasons)):
        seen: dict[str, list[Result]] = {}
        for r in _explained(view):
            for reason in dict.fromkeys(reasons_of(r)):
                seen.setdefault(reason, []).append(r)
        if not seen:
            continue
        ranked = sorted(seen.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        rows = [[reason, str(len(rs)), ", ".join(dict.fromkeys(r.label for r in rs))] for reason, rs in ranked]
        out.append(Table(f"{what} across the run", ["reason", "cases", "models"], rows))
    return out


def _of(value: float | None, peak: tuple[float, str] | None, unit: float) -> str:
    """A rate, and its share of the peak where the peak is known."""
    if value is None:
        return ""
    return f"{value:.3g} ({value * unit / peak[0]:.0%})" if peak else f"{value:.3g}"


def hardware_tables(view: View) -> list[Table]:
    """How close to the hardware: forward passes by arithmetic intensity against the ridge point (memory- or
    compute-bound), eager and compiled; text generation by the bandwidth its decode steps reach."""
    host = data.host_peaks(view.results)
    peaks_of = lambda r: (data.peak_flops(r, host.get(r.env.machine)),  # noqa: E731
                          data.peak_bandwidth(r, host.get(r.env.machine)))
    order = lambda r: (data.hardware(r), r.label, *_order(r))  # noqa: E731
    forward = sorted((r for r in view.latest if r.bytes_moved and not r.case.generation), key=order)
    decode = sorted((r for r in view.latest if data.decode_gbs(r)), key=order)
    out = ([_forward_table(forward, peaks_of)] if forward else []) + ([_decode_table(decode, peaks_of)] if decode else [])
    used = {p[1] for r in forward for p in peaks_of(r) if p} | {bw[1] for r in decode if (bw := peaks_of(r)[1])}
    if used:
        cpu = any(not r.env.is_cuda for r in forward + decode)
        out[-1].notes.append("Peaks: " + "; ".join(sorted(used)) + "." + (
            " A CPU's are rates measured on it, reference points rather than ceilings: a convolution (oneDNN's "
            "algorithms) can beat a plain matmul's rate, and a share above 100% says so." if cpu else ""))
    return out


def _forward_table(rows: list[Result], peaks_of) -> Table:
    def ridge(r):
        flops, bw = peaks_of(r)
        return f"{flops[0] / bw[0]:.3g}" if flops and bw else ""

    columns = [
        ("Task/Model", lambda r: r.label), ("Batch", lambda r: str(r.case.batch_size)), ("Variant", variant_label),
        ("GFLOP", lambda r: f"{r.flops / 1e9:.3g}" if r.flops else ""),
        ("MB moved", lambda r: f"{r.bytes_moved / 1e6:.4g}"),
        ("FLOP per byte", lambda r: _num(bandwidth.intensity(r.flops, r.bytes_moved))),
        ("ridge FLOP per byte", ridge),
        ("bound", lambda r: bandwidth.bound(r.flops, r.bytes_moved, *[p and p[0] for p in peaks_of(r)]) or ""),
        ("GB/s (of peak)", lambda r: _of(data.achieved_gbs(r), peaks_of(r)[1], 1e9)),
        ("TFLOP/s (of peak)", lambda r: _of(data.achieved_tflops(r), peaks_of(r)[0], 1e12)),
    ]
    return table("How close to the hardware: forward passes", columns, rows, [
        "MB moved: eager, every operator's inputs and outputs (no fusion); compiled, the bytes inductor's kernels "
        "access by its own count (a cold compile's; a warm one loads its graphs and counts nothing). Below the "
        "ridge point (peak FLOP/s over peak bytes/s) a model is memory-bound: fewer bytes, not fewer FLOPs, "
        "make it faster."])


def _decode_table(rows: list[Result], peaks_of) -> Table:
    def gbs(r):
        mean, low, high = data.decode_gbs(r)
        return f"{mean:.3g} ({low:.3g}-{high:.3g})" if low and high else f"{mean:.3g}"

    def of_peak(r):
        bw = peaks_of(r)[1]
        return f"{data.decode_gbs(r)[0] * 1e9 / bw[0]:.0%}" if bw else ""

    def moved(r):
        m = r.generation.decode_bytes
        return f"{m.per_step / 1e6:.4g} ({m.weights / 1e6:.4g} + {m.kv_cache / 1e6:.3g})"

    columns = [
        ("Task/Model", lambda r: r.label), ("Batch", lambda r: str(r.case.batch_size)), ("Variant", variant_label),
        ("prompt", lambda r: str(r.case.prompt_len)),
        ("MB per decode step (weights + KV cache)", moved),
        ("ms per token", lambda r: f"{r.generation.per_token.mean:.3f}"),
        ("decode GB/s (95% CI)", gbs),
        ("of peak bandwidth", of_peak),
    ]
    return table("How close to the hardware: decoding", columns, rows, [
        "A decode step must read every weight once and the KV cache so far (here at its mean length over the "
        "call's steps); those bytes over the time per token is the bandwidth it reached, which bounds decoding."])


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.3g}"


def sections(view: View, charts: list) -> list:
    """The items of the report's "Why it is (not) faster" section, the where-the-time-goes charts after their
    tables."""
    times = time_tables(view)
    items: list = [PROFILE_NOTE] if times else []
    for t in times:
        items.append(t)
        items += [c for c in charts if c.section == ("why", t.title)]
    compiler = compiler_table(view)
    return items + ([compiler] if compiler else []) + reason_tables(view) + hardware_tables(view)


def charts(view: View, out_dir: str, taken: set[str]) -> list[Chart]:
    """Where each profiled call's time goes (--profile): stacked bars, one per profiled case (batch and variant),
    its call's milliseconds in matmul/conv, in other kernels and outside them."""
    out = []
    for hw, label, rows in profiled(view):
        t = title(label, hw)
        widths = {share: [r.profile.shares_ms[share] for r in rows] for share in profiling.SHARES}
        out.append(drawing.stacked(("why", t), t, [f"b{r.case.batch_size} {variant_label(r)}" for r in rows], widths,
                                   drawing.stem(out_dir, f"time-split-{label}-{hw}", taken),
                                   "milliseconds per call in the profiled pass (profiling adds its own overhead)"))
    return out
