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
import shutil
from pathlib import Path

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
    ("the interval comes from the per-process ratios.",  # issue 40: pairs of processes by round
     "the interval comes from the per-process ratios. Paired by round: from 5 rounds of one run, the interval comes "
     "from the ratios of each round's two processes, which ran back to back."),
]
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


def test_a_release_file_reports_as_that_release_did(release_db, tmp_path):
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
    assert without((out / "report.md").read_text(), ADDED_COLUMNS, ADDED_LINES) == without(released, REPLACED_COLUMNS)
    added = {"inputs", "environment", "cpu_energy_per_call_j", "energy_per_token_j", "cpu_energy_per_token_j",
             "across_runs_drift", "ttft_across_runs_drift", "per_token_across_runs_drift", "looks", "undecided_by", "unstable_groups", "tag",
             "cudagraph_pool_bytes", "pair_from", "paired_by", "ttft_paired_by", "per_token_paired_by",
             *flat.WHY, *flat.START,
             *flat.SHAPES, "eager_self_rel_err", "reproduce", "quantize", "quality", "weight_bytes",
             "sensitivity_rel_err"}  # issue 57: the engines' columns (in flat.START) and the sensitivity floor
    with open(out / "results.csv") as new, open(RELEASE / "results.csv") as old:
        new_rows, old_rows = list(csv.DictReader(new)), list(csv.DictReader(old))
    assert [{k: v for k, v in r.items() if k not in added} for r in new_rows] == old_rows
    by = {"paired_by": "paired", "ttft_paired_by": "ttft_paired", "per_token_paired_by": "per_token_paired"}
    assert all(r[k] == "" for r in new_rows for k in added - set(by) - {"reproduce", "quantize", "weight_bytes"})
    assert {r["quantize"] for r in new_rows} == {"none"}  # issue 52: the release quantized nothing
    # issue 53: each row's command is the release's run of its model, with its device and batch size named
    for r in new_rows:
        (run,) = [c for c in RUNS if c.startswith(f"--model {r['model']} ")]
        named = {"compilebench", "run", "--device", "cpu", "--batch-size", r["batch_size"]}  # where the run took defaults
        assert set(r["reproduce"].split()) - named <= set(run.split()), r["reproduce"]
    # what the release called paired (the variants shared each process) is paired by process; nothing by round
    assert all(r[k] == ("process" if r[p] == "True" else "") for r in new_rows for k, p in by.items())
    new_json, old_json = json.loads((out / "results.json").read_text()), json.loads((RELEASE / "results.json").read_text())
    assert [{k: v for k, v in r.items() if k not in added} for r in new_json] == old_json


@pytest.mark.parametrize("command", RUNS)
def test_a_release_file_resumes_with_every_repeat_done(release_db, command):
    """The same command again, on the machine that wrote the file, measures nothing: every case's resume key
    and every repeat are found."""
    from compilebench import cli
    from compilebench.cli import options, run
    from compilebench.run import dispatch, plan, schedule, sweep
    from compilebench.storage.store import Store

    args = options.parser(cli._commands()).parse_args(["run", *command.split(), "--device", "cpu"])
    prepared = plan.prepare(run.run_spec(args))
    (machine,) = {r.machine_id for r in data.load([release_db])}
    outcome = sweep.SweepOutcome()
    with Store.open(release_db) as store:
        todo = schedule.schedule(prepared.spec, prepared.cases, store, [dispatch.Target("cpu", machine, {})], outcome).units
    assert todo == [] and outcome.done_before == len(prepared.cases) * prepared.spec.repeats > 0
