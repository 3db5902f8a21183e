"""A results file written by compilebench 0.2.0 (tests/data/release-0.2.0: three real runs of tiny models on this
project's 2-core machine, before settings, results and the run prelude were each declared once) opens, resumes
and reports as that release reported it: the same markdown, CSV and JSON to the byte.

The runs that wrote it:
  compilebench run --model resnet-50 --tiny --variant eager default --batch-size 1 2 --iters 5 --warmup 1 --repeats 2
  compilebench run --model segformer --tiny --variant eager default --dtype bfloat16 --channels-last --interleave
      --iters 5 --warmup 1 --repeats 2
  compilebench run --model smollm2-135m --tiny --variant eager default --iters 3 --new-tokens 4 --prompt-len 8
      --first-calls 1 --warmup 1 --repeats 2 --sync-each-call"""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import fakeresults as fr
import pytest

from compilebench import report
from compilebench.report import data, flat
from compilebench.report.view import View

RELEASE = Path(__file__).parent / "data" / "release-0.2.0"
# Legend sentences reworded on purpose since the release, each (as 0.2.0 wrote it, as it reads now): the figures
# under them are the release's to the byte.
REWORDED = [
    ("peak memory: CUDA max_memory_allocated of each case on a GPU;",  # issue 42: the CUDA graphs' pools count
     "peak memory: on a GPU the allocator's peak over the steady state, plus the CUDA graphs' pools it counts free "
     "though each replay writes into them;"),
    ("the interval comes from the per-process ratios.",  # issue 40: pairs of processes by round; 62: from 3, drawn
     "the interval comes from the per-process ratios. Paired by round: from 5 rounds of one run, the interval comes "
     "from the ratios of each round's two processes, which ran back to back, in an order drawn afresh each round."),
]
# Issue 62: one figure per process, its median; an undecided verdict says what it could see. Under the reading of
# the release's day (the former_reading fixture) its figures are the release's; these words are today's.
REWORDED_62 = [
    ("Times are the mean milliseconds of one call of the whole batch (a forward pass, or a generate() call), estimated "
     "from independent worker processes (repeats); see Details for each result's 95% interval, R, N and noise.",
     "Times are the milliseconds of one call of the whole batch (a forward pass, or a generate() call): the median of "
     "each worker process's calls, estimated over independent processes (repeats); see Details for each result's "
     "95% interval, R, N, noise and the guide's mean of the calls."),
    ("from each side's per-process means (geometric, in log space)",
     "from each side's per-process figures (the median of each process's timed calls; geometric, in log space)"),
    ("measure on a quieter machine.", "measure on a quieter machine. An inconclusive one says its reach: the smallest "
     "effect it could tell from none (its interval's half-width), and about how many more rounds, at the same "
     "estimate and spread, would decide it."),
    ("mean: the geometric mean of the per-process means of the R repeats (fresh worker processes); its 95% interval "
     "is between processes, so it holds what a rerun would see. N: timed calls in each repeat. CV within a process "
     "describes one process's noise only; the spread between processes is the standard deviation of the log means.",
     "ms: the case's latency, the geometric mean over the R repeats (fresh worker processes) of the median of each "
     "process's timed calls; its 95% interval is between processes, so it holds what a rerun would see. mean ms: the "
     "guide's mean of the timed calls (the geometric mean of each process's mean), which one slow stretch of calls "
     "pulls. N: timed calls in each repeat. CV within a process describes one process's noise only; the spread "
     "between processes is the standard deviation of the log per-process figures."),
    ("Paired by round: from 5 rounds of one run, the interval comes from the ratios of each round's two processes, "
     "which ran back to back.", "Paired by round: from 5 rounds of one run, the interval comes from the ratios of "
     "each round's two processes, which ran back to back, in an order drawn afresh each round."),
    ("each look's interval at its share of the 5% (Lan-DeMets Pocock-type spending: ",
     "each look's interval at the group-sequential boundary of Lan-DeMets Pocock-type spending of the 5% ("),
    ("the compiled model takes 80% of the time), over",  # a generation case's verdict per token (core/generation)
     "the compiled model takes 80% of the time; text generation's: per decoded token), over"),
    ("over the same models; on a CPU a peak",  # an interleaved process's peak is both variants': not compared
     "over the same models, but for those whose variants shared each process (--interleave: one peak, both's); on a "
     "CPU a peak"),
    ("compile's; never: it is no faster per request. The recommended start is the fastest of those whose steady "
     "speed-up is `faster` and that pay off within the requests given (--requests).",  # a start's pay-off, its range
     "compile's, and in brackets the same at each end of the steady speed-up's 95% interval; never: it is no faster "
     "per request. The recommended start is the fastest of those whose steady speed-up is `faster` and that pay off "
     "within the requests given (--requests) at both ends."),
]
BREAK_EVEN_ENDS = re.compile(r"\| ([\d,]+) \[[\d,]+-(?:[\d,]+|never)\] \|")
ONE_PEAK = re.compile(r"\| 1\.00x \(([\d,]+) / \1 MiB\) \|")
# the break-even's range in the legends (the speed-up table's, the recommendation's), with the compile's own noise
BREAK_EVEN_RANGE = re.compile(r" (Its range|break-even: the inferences after which compiling has paid for itself, and "
                              r"in brackets)(?:[^.]|\.\d)*\.")  # its sentence: 0.80x's point is not its end
START_SPREAD = re.compile(r", with the first call \d\.\d\dx as long[^;]*;")  # the start-up's pay-off, its compile's noise
GENERATION_BREAK_EVEN = re.compile(r" Text generation: its speed-up, interval and verdict are per decoded token[^.]*\.")
SERVING = re.compile(r"\| (\d+\.\d) \[\d+\.\d-\d+\.\d\](?= \|)")  # the start-up's N requests s, its range beside it
FIRST_ANSWER = re.compile(r"\| (\d+\.\d\d) \[\d+\.\d\d-\d+\.\d\d\](?= \|)")  # a compiled start's seconds, their range
STEADY = re.compile(r"\| (\d+\.\d{3}) \[\d+\.\d{3}-\d+\.\d{3}\](?= \|)")  # a recommended start's steady ms, its interval
COMPILE_NOTE = re.compile(r"compile s: a cold compile, measured once a case[^\n]*\n")  # the guide table's note
COLD_COMPILE = re.compile(r" \(their median\)\. Each has in brackets .*?\)\.(?= break-even:)")
COLD_WORDS = "; a compiled start has in brackets the same with its first call (an engine: and its preparation) as far " \
    "shorter or longer as one compile moves from another"
ENGINE_START = " (another engine: preparing it)"  # what an engine's start loads
SERVING_WORDS = (" N requests s: the start and then N requests at the steady latency, and in brackets the same at the "
                 "ends of its 95% interval, the compile as far shorter or longer.")
GEOMEAN = " The geomean's interval: the models' (in log space) in quadrature over their count."
RIVAL = (" Where the run could not tell the pick from the next fastest such variant, why says so, with the pick's "
         "speed-up over it.")
REACH = re.compile(r"differences under ±\d+% are out of this run's reach; [^;|]*; ")
UNDECIDED_NOTES = "Where the machine moved, or a verdict was left undecided:\n\n| note |\n|:---:|\n\n"
# peak memory read from each process's, with its interval (a CPU's RSS moves): the columns and the words said so
MEMORY_COLUMNS = ("peak memory compiled / eager", "memory compression")
MEMORY_WORDS = (" compiled / eager: from each process's peak (log space, as a latency), with its 95% interval where the "
                "peaks moved from one process to another (a CPU's RSS; a GPU allocator's does not), beside each side's "
                "(the geometric mean of its processes'); `check` reads the same.",
                ", and moves from one process to another: each model's ratio then has its interval (the speed-up "
                "table's), and the geomean's is theirs in quadrature.")


def as_before_62(new: str, old: str) -> tuple[str, str]:
    """A report of today beside one written before issue 62, each with what issue 62 added or reworded taken out:
    the notes on undecided verdicts (each comparison's reach: tested apart), the reach in a recommendation's why,
    the details' median-based column (`ms`, under the former reading the same figure as `mean ms`), the break-even's
    range at the ends of the speed-up's interval (its column, its legend's sentence, and beside the recommendation's
    break-even; the start-up note's words on the compile's own noise, and the range of its N requests s and of a
    cold start's seconds, and a recommended start's steady latency's interval; what a
    language model's row reads per token and in whole calls), the
    geomean's interval (its column and sentence), the recommendation's sentence on a runner-up it could not tell its
    pick from, and an interleaved case's peak memory, one process's for both variants, which the release read as a
    ratio of 1.00x."""
    for before, now in REWORDED_62:
        old = old.replace(before, now)
    old = ONE_PEAK.sub("| one process held both |", old)  # an interleaved case's one peak, read as a ratio then
    new = REACH.sub("", new)
    new = "\n".join(line for line in new.split("\n") if not line.startswith("| undecided: "))
    old = "\n".join(line for line in old.split("\n") if not line.startswith("| undecided: "))
    new, old = new.replace(UNDECIDED_NOTES, ""), old.replace(UNDECIDED_NOTES, "")
    for words in MEMORY_WORDS:
        new = new.replace(words, "" if words.startswith(" ") else ".")
    new, old = without(new, MEMORY_COLUMNS), without(old, MEMORY_COLUMNS)
    new = BREAK_EVEN_RANGE.sub("", without(new, ("mean ms", "break-even range", "geomean 95% CI")))
    new = START_SPREAD.sub(";", new.replace(RIVAL, "").replace(GEOMEAN, "").replace(SERVING_WORDS, ""))
    new = FIRST_ANSWER.sub(r"| \1", new.replace(COLD_WORDS, "").replace(ENGINE_START, ""))  # a compiled start's seconds, their range apart
    new = COLD_COMPILE.sub(".", COMPILE_NOTE.sub("", new))  # a cold compile's range: its notes (cells: SERVING's)
    new = GENERATION_BREAK_EVEN.sub("", SERVING.sub(r"| \1", new))
    new = BREAK_EVEN_ENDS.sub(r"| \1 |", new)  # the recommendation's break-even, its range beside it
    new = STEADY.sub(r"| \1", new)
    return new.replace("| flags | ms | 95% CI ms |", "| flags | mean ms | 95% CI ms |"), old
# Columns of the report's tables added (or, from the release's side, replaced) since the release, and the legend
# lines that came with them: left out of both sides, so the rest of each table compares to the byte.
ADDED_COLUMNS = ("pass rate", "memory compression", "id", "reproduce")  # issue 53: the suite summary, reproduce
REPLACED_COLUMNS = ("compiled not ok",)  # issue 53: the pass rate says it
ADDED_LINES = ("Pass rate of the suite:", "memory compression = ", "reproduce: the command")


def without(text: str, columns: tuple[str, ...], lines: tuple[str, ...] = ()) -> str:
    """A markdown report with the named columns taken out of every table, and the lines starting so."""
    out, drop, in_table = [], [], False
    for line in text.split("\n"):
        if lines and line.startswith(lines):
            continue
        if line.startswith("|:"):
            cells = line[1:-1].split("|")
            line = "|" + "".join(c + "|" for i, c in enumerate(cells) if i not in drop)
        elif line.startswith("| "):
            cells = line[2:-2].split(" | ")
            if not in_table:  # a table's first line: its header
                drop = [i for i, c in enumerate(cells) if c in columns]
            line = "| " + " | ".join(c for i, c in enumerate(cells) if i not in drop) + " |"
        in_table = line.startswith("|")
        out.append(line)
    return "\n".join(out)


RUNS = (
    "--model resnet-50 --tiny --variant eager default --batch-size 1 2 --iters 5 --warmup 1 --repeats 2",
    "--model segformer --tiny --variant eager default --dtype bfloat16 --channels-last --interleave --iters 5 "
    "--warmup 1 --repeats 2",
    "--model smollm2-135m --tiny --variant eager default --iters 3 --new-tokens 4 --prompt-len 8 --first-calls 1 "
    "--warmup 1 --repeats 2 --sync-each-call",
)


@pytest.fixture
def release_db(tmp_path) -> str:
    path = tmp_path / "results.db"
    shutil.copy(RELEASE / "results.db", path)
    return str(path)


SPEEDUP = tuple(flat._speedup_columns("", None, 0.02))  # the speed-up's columns, unprefixed


def as_released(row: dict) -> dict:
    """A row as the release wrote it: its unprefixed speed-up columns read whole calls then, a text-generation case's
    too (since: per token, as its verdict everywhere; whole calls in `call_*`)."""
    if row["speedup_of"] != "token":
        return row
    return {**row, **{k: row[f"call_{k}"] for k in SPEEDUP if f"call_{k}" in row}}


def test_a_release_file_reports_as_that_release_did(release_db, tmp_path, former_reading):
    """The markdown to the byte; the CSV and JSON rows with the same values under the same column names (their
    order follows the settings' declaration now), plus the one setting 0.2.0 left out of them (`inputs`) and the
    drift of speed-ups across runs (empty: a file that does not record its runs is one run in a report) and the
    environment (--env) a case ran under (empty: none), and the CPU packages' energy and energy per token (empty:
    not measured then), and why a result is what it is (issue 26's phases, profiles and traces: none then), and how
    it starts (issue 25's regions, recompile limit: none then), and the design of its repeats (issue 40's looks and
    why a case was left undecided: a fixed design then), and the run's label (issue 41's tag: none then), and the
    CUDA graphs' pools (issue 42: a CPU has none). The legend's sentences reworded since (REWORDED) read as now."""
    out = tmp_path / "report"
    report.write(View(data.load([release_db]), 0.02), str(out), ("md", "csv", "json"), ["results.db"])
    released = (RELEASE / "report.md").read_text()
    for old, new in REWORDED:
        assert old in released
        released = released.replace(old, new)
    made, released = as_before_62((out / "report.md").read_text(), released)
    assert without(made, ADDED_COLUMNS, ADDED_LINES) == without(released, REPLACED_COLUMNS)
    added = {"inputs", "environment", "cpu_energy_per_call_j", "energy_per_token_j", "cpu_energy_per_token_j",
             "across_runs_drift", "ttft_across_runs_drift", "per_token_across_runs_drift", "looks", "undecided_by", "unstable_groups", "tag",
             "cudagraph_pool_bytes", "pair_from", "paired_by", "ttft_paired_by", "per_token_paired_by",
             *flat.WHY, *flat.START,
             *flat.SHAPES, "eager_self_rel_err", "reproduce", "quantize", "quality", "weight_bytes",
             "sensitivity_rel_err",  # issue 57: the engines' columns (in flat.START) and the sensitivity floor
             # issue 62: the median-based latency (the release's figure under its reading) and each reach
             "latency_ms", *(f"{p}{c}" for p in ("", "ttft_", "per_token_") for c in ("reach_pct", "rounds_to_decide")),
             "break_even_fewest", "break_even_most",  # the break-even at the ends of the speed-up's interval
             "compile_s_low", "compile_s_high",  # a cold compile, measured once, as far as one moves from another
             *(f"{p}speedup_groups" for p in ("", "ttft_", "per_token_")),  # a paired speed-up's two groups, if any
             *flat.SHARING,  # an interleaved speed-up against its variants' warm-ups: the release interleaved none
             "steps", "decoder_share", "compile_decoder",  # issue 64: a pipeline's steps, decoder, decoder compiled
             "launch_cpu_ms"}  # issue 62: a GPU call's launches, the calling thread's CPU time (a CPU has none)
    calls = {"speedup_of", *(f"call_{k}" for k in SPEEDUP)}  # a LM's verdict per token unprefixed, calls in call_*
    added |= calls
    with open(out / "results.csv") as new, open(RELEASE / "results.csv") as old:
        new_rows, old_rows = list(csv.DictReader(new)), list(csv.DictReader(old))
    assert fr.same_rows([as_released(r) for r in new_rows], old_rows, added)
    by = {"paired_by": "paired", "ttft_paired_by": "ttft_paired", "per_token_paired_by": "per_token_paired"}
    since_62 = {"latency_ms", "break_even_fewest", "break_even_most", "compile_s_low", "compile_s_high",
                *(k for k in added if k.endswith(("reach_pct", "rounds_to_decide"))), *calls}
    assert all(r[k] == "" for r in new_rows for k in added - set(by) - {"reproduce", "quantize", "weight_bytes"}
               - since_62)
    assert all(fr.same_rows([{"x": r["latency_ms"]}], [{"x": r["mean_ms"]}]) for r in new_rows)  # one figure then
    assert {r["quantize"] for r in new_rows} == {"none"}  # issue 52: the release quantized nothing
    # issue 53: each row's command is the release's run of its model, with its device and batch size named
    for r in new_rows:
        (run,) = [c for c in RUNS if c.startswith(f"--model {r['model']} ")]
        named = {"compilebench", "run", "--device", "cpu", "--batch-size", r["batch_size"]}  # where the run took defaults
        assert set(r["reproduce"].split()) - named <= set(run.split()), r["reproduce"]
    # what the release called paired (the variants shared each process) is paired by process; nothing by round
    assert all(r[k] == ("process" if r[p] == "True" else "") for r in new_rows for k, p in by.items())
    new_json, old_json = json.loads((out / "results.json").read_text()), json.loads((RELEASE / "results.json").read_text())
    assert fr.same_rows([as_released(r) for r in new_json], old_json, added)


def test_a_release_file_read_today_takes_each_processs_median_and_says_what_an_undecided_verdict_could_see(
        release_db, tmp_path):
    """Issue 62: the figures are derived when a file is read, so the release's processes are read by today's rule:
    the latency is the geometric mean of their medians (the guide's mean stays in mean_ms), and each undecided
    comparison says its reach in the notes and the CSV."""
    import statistics

    results = data.load([release_db])
    out = tmp_path / "report"
    report.write(View(results, 0.02), str(out), ("md", "csv"), ["results.db"])
    with open(out / "results.csv") as f:
        rows = {r["result_id"]: r for r in csv.DictReader(f)}
    for r in results:
        medians = [statistics.median(rep.samples_ms) for rep in r.repeats if rep.samples_ms]
        row = rows[r.result_id]
        assert float(row["latency_ms"]) == pytest.approx(statistics.geometric_mean(medians))
        assert float(row["mean_ms"]) == pytest.approx(statistics.geometric_mean(
            [statistics.fmean(rep.samples_ms) for rep in r.repeats if rep.samples_ms]))
    # a case's verdict, in the unprefixed columns: its time per token for text generation, else its calls'
    undecided = [r for r in rows.values() if r["verdict"] == "inconclusive"]
    assert undecided and all(float(r["reach_pct"]) > 0 and r["rounds_to_decide"] for r in undecided)
    notes = [line for line in (out / "report.md").read_text().split("\n") if line.startswith("| undecided: ")]
    assert len(notes) == len(undecided) and all("are out of this run's reach" in n for n in notes)
    # the release's SmolLM2 read inconclusive by whole generate() calls, faster per token: the CSV's verdict is the
    # report's (faster, no undecided line), its whole calls' kept in call_*
    (lm,) = [r for r in rows.values() if r["task"] == "text-generation" and r["variant"] == "default"]
    assert (lm["verdict"], lm["per_token_verdict"], lm["call_verdict"]) == ("faster", "faster", "inconclusive")
    assert (lm["speedup"], lm["speedup_of"]) == (lm["per_token_speedup"], "token")
    assert {r["speedup_of"] for r in rows.values() if r["task"] != "text-generation"} == {"call"}
    assert not any("SmolLM2" in n for n in notes)


@pytest.mark.parametrize("command", RUNS)
def test_a_release_file_resumes_with_every_repeat_done(release_db, command):
    """The same command again, on the machine that wrote the file, measures nothing: every case's resume key
    and every repeat are found."""
    from compilebench import cli
    from compilebench.cli import options, run
    from compilebench.run import dispatch, plan, rounds, sweep
    from compilebench.storage.store import Store

    args = options.parser(cli._commands()).parse_args(["run", *command.split(), "--device", "cpu"])
    prepared = plan.prepare(run.run_spec(args))
    (machine,) = {r.machine_id for r in data.load([release_db])}
    outcome = sweep.SweepOutcome()
    with Store.open(release_db) as store:
        todo = rounds.schedule(prepared.spec, prepared.cases, store, [dispatch.Target("cpu", machine, {})], outcome).units
    assert todo == [] and outcome.done_before == len(prepared.cases) * prepared.spec.repeats > 0
