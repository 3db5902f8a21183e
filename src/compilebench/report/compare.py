"""`compilebench compare A.db B.db`: the same cases side by side (two GPUs, two torch versions, cold vs warm
compile cache), with the ratio of B's mean time to A's, its 95% CI from both sides' per-process figures and the
verdict every table uses (faster, slower, same, inconclusive against the minimum effect). `compare RUN.db --env-a
stable --env-b nightly`: two environments of one run (--env), whose repeats alternated: no drift between them.

Cases match on everything but the device and the environment, so a GPU can be compared with another GPU or with a
CPU, and one environment with another."""

from __future__ import annotations

from compilebench.core import drift, generation, speedups, stats
from compilebench.core.environment import apart
from compilebench.core.errors import UserError
from compilebench.core.pairing import match_key
from compilebench.core.result import Result
from compilebench.core.vocab import Verdict
from compilebench.report import data
from compilebench.report.cells import Columns, Table, cell, drift_note, interval, num, table, verdict, verdict_note


def select(results: list[Result], machine: str | None, environment: str | None = None) -> list[Result]:
    """Results of the machines whose id or hardware name contains `machine` (all when None), measured under the
    environment named `environment` (--env; all when None)."""
    if machine is not None:
        results = [r for r in results if machine in r.machine_id or machine in data.hardware(r)]
    if environment is not None:
        results = [r for r in results if r.case.environment == environment]
    return results


def environments(results: list[Result]) -> list[str]:
    """The environments (--env) results were measured under, by name."""
    return sorted({r.case.environment for r in results if r.case.environment})


def one_per_case(results: list[Result], name: str, option: str, env_option: str) -> dict[str, Result]:
    """The newest result of each case, by match key; a UserError where a file holds a case from several machines
    or environments, naming the option that picks one. A shapes result (`compilebench shapes`) has no one latency
    to compare: left out."""
    shown = [r for r in data.latest(results) if not r.case.shapes]
    environments_of: dict[str, set] = {}
    machines: dict[str, set[str]] = {}
    for r in shown:
        environments_of.setdefault(match_key(r), set()).add(r.case.environment)
        machines.setdefault(match_key(r), set()).add(r.machine_id)
    if any(len(envs) > 1 for envs in environments_of.values()):
        raise UserError(f"{name} holds the same cases under {len(environments(results))} environments "
                        f"({', '.join(environments(results))}): pick one with {env_option} NAME")
    several = sorted({m for ms in machines.values() if len(ms) > 1 for m in ms})
    if several:
        raise UserError(f"{name} holds the same cases from {len(several)} machines ({'; '.join(several)}): "
                        f"pick one with {option} TEXT (a part of its machine id or hardware name)")
    return {match_key(r): r for r in data.latest(shown, key=match_key)}


def nothing_in_common(a: dict[str, Result], b: dict[str, Result], a_name: str, b_name: str) -> UserError:
    """The error of two sides without a case in common (by match key), naming what the nearest two cases (one a
    side, of one model) differ in: a quick suite interleaved (the README's command since issue 62) against one
    measured a process each is no comparison, and the user must see why."""
    said = f"{a_name} and {b_name} have no case in common (same model, batch size, variant and settings)"
    pairs = [(ra.case.model, _settings(ra), _settings(rb)) for ra in a.values() for rb in b.values()
             if ra.case.model == rb.case.model]
    if not pairs:
        return UserError(f"{said}: not one model is in both")
    model, sa, sb = min(pairs, key=lambda p: len(_differ(p[1], p[2])))
    return UserError(f"{said}; the nearest two, of {model}, differ in " + "; ".join(
        f"{name}: {sa.get(name)} ({a_name}), {sb.get(name)} ({b_name})" for name in _differ(sa, sb)))


def incomparable(a: dict[str, Result], b: dict[str, Result], a_name: str, b_name: str) -> UserError | None:
    """Why two sides cannot be compared: no case in common (nothing_in_common), or every case in common one and the
    same measurement (a file given as both, or a copy of it: every ratio would read 1.000 exactly, "same", as if
    measured twice); None where they can."""
    common = set(a) & set(b)
    if not common:
        return nothing_in_common(a, b, a_name, b_name)
    if all((a[k].result_id, len(a[k].repeats)) == (b[k].result_id, len(b[k].repeats)) for k in common):
        return UserError(f"{a_name} and {b_name} hold the same measurements (one results file, or a copy of it): "
                         f"give two results files, or two environments of one run")
    return None


def _settings(r: Result) -> dict:
    """What a case is matched on (pairing.match_key), one level: the variant's fields beside the case's."""
    case = {k: v for k, v in {**r.case_extra, **r.case.to_dict()}.items() if k not in ("device", "environment")}
    variant = case.pop("variant")
    return {**case, **{f"variant {k}": v for k, v in variant.items()}}


def _differ(a: dict, b: dict) -> list[str]:
    return sorted(k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k))


DESCRIBED = ("device_name", "torch", "environment")  # what _describe names of each side


def _describe(results: list[Result]) -> str:
    parts = dict.fromkeys(f"{data.hardware(r)}, torch {data.torch_version(r)}" +
                          (f", environment {r.case.environment}" if r.case.environment else "") for r in results)
    return "; ".join(parts)


def apart_note(a: list[Result], b: list[Result], skip=(), names=("A", "B")) -> str | None:
    """What the two sides' figures depend on beyond what the comparison is of, where it differs (core/environment
    .apart: the C allocator, transformers, the driver, threads, TF32...): a difference the reader must weigh."""
    found = apart([e for r in a for e in r.environments], [e for r in b for e in r.environments], skip)
    if not found:
        return None

    def said(values: list) -> str:
        return ", ".join("not recorded" if v is None else str(v) for v in values)

    return (f"{names[0]} and {names[1]} also differ in what their figures depend on: " + "; ".join(
        f"{name}: {said(va)} ({names[0]}), {said(vb)} ({names[1]})" for name, (va, vb) in found.items()))


def undecided(size: str, across: drift.Drift | None, reach: str = "") -> str:
    """Why a comparison was left undecided, and what decides it: `check` and `compare` say it alike. `reach`: what
    it could and could not see (speedups.out_of_reach)."""
    seen = f"; {reach}" if reach else ""
    if across:
        return (f"{size}, the interval holds the run-to-run drift ({across.value:.0%}){seen}: measure both in one "
                "run (--env), or give --drift")
    return f"{size}, its interval is too wide to tell{seen}: more repeats decide it (a larger --repeats)"


def compare(a: list[Result], b: list[Result], a_name: str, b_name: str, min_effect: float = stats.DEFAULT_MIN_EFFECT,
            given: drift.Drift | None = None) -> Table:
    """A's results against B's, case by case; `given`: the run-to-run drift (--drift), else estimated."""
    stats.check_min_effect(min_effect)
    a_cases = one_per_case(a, a_name, "--machine-a", "--env-a")
    b_cases = one_per_case(b, b_name, "--machine-b", "--env-b")
    keys = list(dict.fromkeys([*a_cases, *b_cases]))
    if (unfit := incomparable(a_cases, b_cases, a_name, b_name)) is not None:
        raise unfit
    everything = [*a_cases.values(), *b_cases.values()]
    order = {m: i for i, m in enumerate(data.model_order(everything))}

    def sort_key(k):
        r = a_cases.get(k) or b_cases[k]
        return (order[r.case.model], r.case.batch_size, data.settings(r), r.case.variant.order, k)

    moved = given or drift.estimate([*a, *b], under_test=b_cases.values())  # B's moves are what is asked
    compiles = drift.estimate([*a, *b], lambda r: r.compile_s, drift.COMPILE_DEFAULT, b_cases.values())
    compiled = {k: _compile_ratio(a_cases.get(k), b_cases.get(k), compiles) for k in keys}

    def speedup(k) -> speedups.Speedup | None:
        """A's time over B's (B's speed-up over A), whose verdict reads as B against A; B/A is its inverse. Results of
        two files that do not record their runs are taken to come from different runs."""
        ra, rb = a_cases.get(k), b_cases.get(k)
        if not (ra and rb):
            return None
        return speedups.speedup(ra, rb, min_effect, generation.verdict_metric(ra.case),
                                drift=moved if drift.across_runs(ra, rb, unknown=True) else None)

    said = {k: speedup(k) for k in keys}

    def case(k) -> Result:
        return a_cases.get(k) or b_cases[k]

    columns: Columns = [
        ("Task/Model", lambda k: data.model_label(everything, case(k).case.model)),
        ("Batch Size", lambda k: str(case(k).case.batch_size)),
        ("variant", lambda k: data.with_settings(case(k).case.variant.label, data.settings(case(k)))),
        ("A ms", lambda k: _ms(a_cases[k]) if k in a_cases else "not measured"),
        ("B ms", lambda k: _ms(b_cases[k]) if k in b_cases else "not measured"),
        ("B/A", lambda k: num(1 / said[k].value if said[k] else None, 3)),
        ("95% CI of B/A", lambda k: interval(_inv(said[k].high), _inv(said[k].low), "{:.3f}") if said[k] else ""),
        ("B vs A", lambda k: verdict(said[k])),
        ("A compile s", lambda k: num((r := a_cases.get(k)) and r.compile_s, 1)),
        ("B compile s", lambda k: num((r := b_cases.get(k)) and r.compile_s, 1)),
        ("B/A compile", lambda k: compiled[k]),
    ]
    return table(
        f"{a_name} vs {b_name}", columns, sorted(keys, key=sort_key),
        notes=[f"A: {a_name} ({_describe(list(a_cases.values()))})",
               f"B: {b_name} ({_describe(list(b_cases.values()))})",
               "B/A below 1: B takes less time; B vs A says how B reads against A: faster means B is faster. The "
               "interval comes from both files' per-process figures.", verdict_note(min_effect),
               *([PER_TOKEN_NOTE] if any(generation.verdict_metric(case(k).case) for k in keys) else []),
               *filter(None, [apart_note(list(a_cases.values()), list(b_cases.values()), DESCRIBED)]),
               *([drift_note(moved)] if any(s and s.drift is not None for s in said.values()) else []),
               *([COMPILE_NOTE.format(noise=compiles.describe())] if any(compiled.values()) else []),
               *_undecided_note([(case(k), s) for k, s in said.items()], moved, min_effect)],
    )


def _undecided_note(pairs: list, moved: drift.Drift, min_effect: float) -> list[str]:
    """The cases left inconclusive, counted apart, each with what decides it."""
    open_ = [(r, s) for r, s in pairs if s is not None and s.verdict == Verdict.inconclusive]
    if not open_:
        return []
    across = all(s.drift is not None for _, s in open_)
    words = "; ".join(f"{data.model_label([r], r.case.model)} b{r.case.batch_size} {r.case.variant.label}: " +
                      undecided(f"B{generation.per(r.case)} " +
                                (f"{1 / s.value:.2f}x slower" if s.value < 1 else f"{s.value:.2f}x faster"),
                                moved if s.drift is not None else None, speedups.out_of_reach(s, min_effect))
                      for r, s in open_)
    return [f"{len(open_)} case(s) undecided{' across runs' if across else ''} ({words})."]


PER_TOKEN_NOTE = ("text generation: its ms are per decoded token, the figure its verdict reads everywhere; its "
                  "prefill and whole calls: each file's report, or `compilebench check`")


def _compile_ratio(a: Result | None, b: Result | None, noise: drift.Drift) -> str:
    """B's compile seconds over A's, 'longer' or 'shorter' only beyond how far one compile of a case moves from
    another (one cold compile a side: no interval of its own); '' where a side compiled nothing."""
    if not (a and b and a.compile_s and b.compile_s):
        return ""
    ratio = b.compile_s / a.compile_s
    said = "longer" if ratio > 1 + noise.value else "shorter" if ratio < 1 / (1 + noise.value) else "within noise"
    return f"{ratio:.2f} ({said})"


COMPILE_NOTE = ("B/A compile: one cold compile a side, so a difference is read only beyond how far one compile of a "
                "case moves from another here, {noise}; within it, `compilebench history` over several runs of each "
                "side can tell.")


def _ms(r: Result) -> str:
    """The figure B/A reads of one side: a text-generation case's time per decoded token, any other its calls'."""
    if r.status != "ok" or generation.verdict_metric(r.case) is None:
        return cell(r)
    return f"{r.generation.per_token.mean:.3f} per token"


def _inv(x: float | None) -> float | None:
    return None if x is None else 1 / x
