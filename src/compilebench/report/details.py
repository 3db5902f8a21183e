"""The details of a report: every result with its noise (the numbers behind each table cell, and why a cell is not
a number), and the environment each machine measured in."""

from __future__ import annotations

from compilebench.core import reproduce, stats
from compilebench.core.result import Result
from compilebench.core.vocab import CUDAGRAPHS_SKIPPED, EAGER_NONDETERMINISTIC
from compilebench.report import data, stability
from compilebench.report.cells import Columns, Table, interval, num, table
from compilebench.report.tables import flags_note
from compilebench.report.view import View


def details_table(view: View) -> Table:
    """Every result with its noise: the numbers behind each table cell, and why a cell is not a number."""
    order = {m: i for i, m in enumerate(data.model_order(view.results))}
    results = sorted(view.latest, key=lambda r: (
        data.hardware(r), data.torch_version(r), r.case.environment or "", r.case.batch_size, order[r.case.model],
        data.settings(r), r.case.variant.order, r.created_at))
    boards = {f"{p.device} {p.math} {p.tflops:g}" for p in map(data.peak, results) if p}
    notes = [f"- {_name(r)}: {r.status}: {r.message or ''}".rstrip() for r in results if r.status != "ok"]
    skipped = [f"- {_name(r)}: "
               f"{'; '.join(r.cudagraph_skip_reasons)}" for r in results if CUDAGRAPHS_SKIPPED.name in r.flags]
    checks = [f"- {_name(r)}: {'; '.join(r.self_checks)}" for r in results if r.self_checks]
    through_triton = [f"- {_name(r)}: {r.triton_launchers.triton} of {r.triton_launchers.total}"
                      for r in results if r.triton_launchers.triton]
    unsteady = [f"- {_name(r)}: by {r.eager_self_rel_err:.1e} relative; allowed {r.rel_tolerance:.1e}"
                for r in results if EAGER_NONDETERMINISTIC.name in r.flags]
    tolerances = sorted({(r.math, r.rel_tolerance) for r in results
                         if r.math and r.rel_tolerance and EAGER_NONDETERMINISTIC.name not in r.flags})
    flags = flags_note(view)
    t = table(
        "", COLUMNS, results,
        notes=[f"ms: the case's latency, the geometric mean over the R repeats (fresh worker processes) of "
               f"{stats.PER_PROCESS_WORDS}; its 95% interval is between processes, so it holds what a rerun would "
               "see. mean ms: the guide's mean of the timed calls (the geometric mean of each process's mean), "
               "which one slow stretch of calls pulls. N: timed calls in each repeat. CV within a process describes "
               "one process's noise only; the spread between processes is the standard deviation of the log "
               "per-process figures."]
        + (["(--max-time) after N: the time budget ended a repeat's timed loop before --iters calls (never before "
            "--min-iters)."] if any(r.stopped_early for r in results) else [])
        + (["Flags:"] + flags if flags else [])
        + ([f"of peak: achieved TFLOP/s over the datasheet's dense peak TFLOP/s ({'; '.join(sorted(boards))}); "
            "float32 counts as TF32 when TF32 was allowed for matmuls or convolutions."] if boards else [])
        + ([f"max rel err allowed: {'; '.join(f'{m} {t:.0e}' for m, t in tolerances)} (tf32: float32 whose "
            "convolutions or matmuls ran on TF32 tensor cores, as cuDNN allows by default on Ampere and later)"]
           if tolerances else [])
        + ((["CUDA graphs skipped (inductor's reason):"] + skipped) if skipped else [])
        + ((["Self-checks failed (a figure that real hardware contradicted):"] + checks) if checks else [])
        + ((["Triton kernels launched through Triton's own launcher, not inductor's static one (which takes a kernel "
             "whose compiled binary it finds): more CPU per launch, which at a small batch can set the pace:"]
            + through_triton) if through_triton else [])
        + ((["Eager differed from itself (two calls, same input), so its compiled twin was allowed that much:"]
            + unsteady) if unsteady else [])
        + ((["Not ok:"] + notes) if notes else [])
        + (["reproduce: the command that measures the case again (into the results file you name with --db); "
            "`compilebench run --from-row RESULT_ID --db FILE` measures it again into its own file."]
           if any(reproduce.command(r) for r in results) else []),
    )
    t.commands = ("reproduce",)
    return t


def _measured(r: Result) -> bool:
    return r.measured_mean is not None


def _percent(x: float | None) -> str:
    return "" if x is None else f"{x * 100:.1f}%"


def _name(r: Result) -> str:
    return data.in_environment(f"{r.case.model} b{r.case.batch_size} {r.case.variant.label}", r)


def _of_peak(r: Result) -> str:
    fraction, p = data.peak_fraction(r), data.peak(r)
    return f"{fraction * 100:.1f}% {p.math}" if fraction is not None else ""


COLUMNS: Columns = [
    ("hardware", data.hardware),
    ("torch", lambda r: data.in_environment(f"torch {data.torch_version(r)}", r)),
    ("model", lambda r: r.case.model),
    ("batch", lambda r: str(r.case.batch_size)),
    ("variant", lambda r: data.with_settings(r.case.variant.label, data.settings(r))),
    ("status", lambda r: r.status),
    ("flags", lambda r: ", ".join(r.flags)),
    ("ms", lambda r: num(r.stats.mean, 3) if _measured(r) else ""),
    ("95% CI ms", lambda r: interval(r.stats.ci95_low, r.stats.ci95_high, "{:.3f}") if _measured(r) else ""),
    ("mean ms", lambda r: num(r.stats.mean_of_means, 3) if _measured(r) else ""),
    ("R", lambda r: str(len(r.repeats))),
    ("N per repeat", lambda r: "/".join(str(len(rep.samples_ms)) for rep in r.repeats)
     + (" (--max-time)" if r.stopped_early else "")),
    ("CV within a process", lambda r: _percent(r.stats.within_cv if _measured(r) else None)),
    ("spread between processes", lambda r: _percent(r.stats.between_cv if _measured(r) else None)),
    ("cold compile s", lambda r: num(r.cold_compile_s, 2)),
    ("warm compile s", lambda r: num(r.warm_compile_s, 2)),
    ("max rel err", lambda r: num(r.max_rel_err, None)),
    ("GFLOP", lambda r: f"{r.flops / 1e9:.3g}" if r.flops else ""),  # significant digits: tiny configs are MFLOPs
    ("TFLOP/s", lambda r: "" if (t := data.achieved_tflops(r)) is None else f"{t:.3g}"),
    ("of peak", _of_peak),
    ("id", lambda r: r.result_id[:8]),  # what `run --from-row` takes
    ("reproduce", lambda r: reproduce.command(r) or ""),
]


ENV_FIELDS = ("hostname", "device_name", "device", "cuda_visible_devices", "driver", "cuda", "torch", "transformers", "triton", "python",
              "os", "cpu", "cpu_count", "cpu_affinity", "torch_threads", "float32_matmul_precision", "tf32_matmul", "tf32_cudnn",
              "compilebench")


def environment_tables(results: list[Result]) -> list[Table]:
    """One table per machine: what was installed and set when its results were measured, from every repeat's own
    environment: a field its repeats saw several values of (the GPUs a --gpus run spread its repeats over) lists
    each; a case whose repeats disagree on what they must share (GPU model, torch, driver) is named under it."""
    machines: dict[str, list[Result]] = {}
    for r in sorted(results, key=lambda r: r.created_at):
        machines.setdefault(r.machine_id, []).append(r)
    tables = []
    for machine, rs in machines.items():
        seen: dict[str, list] = {}
        found = [e.shown() for r in rs for e in r.environments] or [rs[-1].env.shown()]
        measured = [rep.host_peaks.shown() for r in rs for rep in r.repeats if rep.host_peaks]  # the machine's peaks
        for said in found + measured:
            for k, value in said.items():
                if value not in seen.setdefault(k, []):
                    seen[k].append(value)
        keys = [k for k in ENV_FIELDS if k in seen] + sorted(k for k in seen if k not in ENV_FIELDS)
        rows = [[k, ", ".join("" if v is None else str(v) for v in seen[k])] for k in keys]
        notes = [said for r in rs if (said := stability.mixed(r))]
        tables.append(Table(f"{rs[-1].env.hardware}: {machine}", ["field", "value"], rows, notes))
    return tables
