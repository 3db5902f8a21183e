"""The results file's three levels (issue 56): a run stored once, each repeat with its own environment, one way to
pair a result with what it is compared against; and files of earlier schemas migrated, reporting what they did.

tests/data/main-dca6dfc: a file written by compilebench at dca6dfc (the last schema-2 main) on this project's
2-core VM, with the report, CSV, JSON and history that version made of it. The runs that wrote it:
  compilebench run --model resnet-50 smollm2-135m --tiny --variant eager default --iters 5 --warmup 1 --repeats 2
      --max-repeats 4 --new-tokens 4 --prompt-len 8 --first-calls 1 --tag t1 --device cpu
  compilebench run --model resnet-50 --tiny --variant eager default --iters 5 --warmup 1 --repeats 2 --tag t2
      --device cpu
(the first left both compiled cases undecided at --max-repeats; its first worker measured the CPU's peaks)."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import shutil
import sqlite3
import threading
from pathlib import Path

import fakeresults as fr
import pytest
from test_release_files import SPEEDUP, as_before_62, as_released

from compilebench import report
from compilebench.core import pairing
from compilebench.core.engines import EngineStart
from compilebench.core.environment import Environment
from compilebench.core.repeat import Repeat
from compilebench.core.result import Result
from compilebench.core.run import Run
from compilebench.core.spec import RunSpec
from compilebench.report import check, compare, data, details, flat, history, history_page, tables
from compilebench.report.view import View
from compilebench.storage import schema
from compilebench.storage.store import Store

MAIN = Path(__file__).parent / "data" / "main-dca6dfc"


@pytest.fixture
def main_db(tmp_path) -> str:
    path = tmp_path / "results.db"
    shutil.copy(MAIN / "results.db", path)
    return str(path)


def _report(path: str, out: Path, formats=("md", "csv", "json")) -> None:
    report.write(View(data.load([path])), str(out), formats, ["r.db"])  # as dca6dfc's was named


def test_a_file_of_dca6dfc_reports_the_same_figures_read_and_after_migration(main_db, tmp_path, former_reading):
    """Read as it is (a report never changes a file), then migrated in place by a run's opening: the markdown to
    the byte, the CSV and JSON rows value for value, the history's rows; a copy of the file as it was kept."""
    with Store.open(main_db, write=False) as store:
        assert store.schema == 2
    _report(main_db, tmp_path / "read", ("csv", "json"))  # its markdown (charts drawn: seconds) once, below
    with Store.open(main_db) as store:  # a run's opening: migrated
        assert store.schema == schema.SCHEMA_VERSION
        runs = store.runs()
    assert sorted(r.tag for r in runs.values()) == ["t1", "t2"] and all(r.recorded for r in runs.values())
    assert sqlite3.connect(schema.backup_path(main_db, 2)).execute("SELECT value FROM meta").fetchone() == ("2",)
    _report(main_db, tmp_path / "migrated")
    # the machine's environment table lists what every repeat saw: here the CPU's peaks its two runs measured,
    # which dca6dfc showed only where the newest result's worker had measured them (not here)
    made = [line for line in (tmp_path / "migrated" / "report.md").read_text().split("\n")
            if not line.startswith(("| host_matmul_gflops_float32 | 34.7, 34.3 |", "| host_stream_gbs | 13.41, 14.08 |"))]
    made, before = as_before_62("\n".join(made), (MAIN / "report.md").read_text())  # issue 62's words apart
    assert made == before
    # columns added after dca6dfc (issue 57; a pipeline's steps, issue 64): empty here
    since = {"sensitivity_rel_err", *EngineStart.columns(), "steps", "decoder_share", "compile_decoder"}
    since_62 = {"latency_ms", *(f"{p}{c}" for p in ("", "ttft_", "per_token_") for c in ("reach_pct", "rounds_to_decide", "speedup_groups")),
                *flat.SHARING, "break_even_fewest", "break_even_most", "compile_s_low", "compile_s_high",
                "compile_cpu_checks_s", "launch_cpu_ms",
                "speedup_of", *(f"call_{k}" for k in SPEEDUP)}  # a LM's verdict per token unprefixed, calls in call_*
    for out in ("read", "migrated"):
        with open(tmp_path / out / "results.csv") as new, open(MAIN / "results.csv") as old:
            rows = list(csv.DictReader(new))
            assert fr.same_rows([as_released(r) for r in rows], list(csv.DictReader(old)), since | since_62), out
            assert all(r[k] == "" for r in rows for k in since)
            assert all(fr.same_rows([{"x": r["latency_ms"]}], [{"x": r["mean_ms"]}]) for r in rows)  # as on dca6dfc's day
        new_json = json.loads((tmp_path / out / "results.json").read_text())
        assert fr.same_rows([as_released(r) for r in new_json], json.loads((MAIN / "results.json").read_text()),
                            since | since_62), out
    rows = history_page.rows(history.series(data.load([main_db]), 0.05))
    tokens = [r for r in rows if r["metric"] == history.TOKENS]
    assert tokens and all(r["ci95_low"] < r["value"] < r["ci95_high"] for r in tokens)  # since 62: its interval
    rows = [{**r, "ci95_low": None, "ci95_high": None} if r in tokens else r for r in rows]
    with open(MAIN / "history.csv") as old:
        assert fr.same_rows([{k: str("" if v is None else v) for k, v in r.items()} for r in rows], list(csv.DictReader(old)))


def test_a_migrated_file_holds_each_run_once_and_what_it_decided(main_db):
    with Store.open(main_db) as store:
        results, runs = store.results(), store.runs()
    t1 = next(r for r in runs.values() if r.tag == "t1")
    assert t1.design == [2, 4] and t1.pair_from and t1.timing["forward"].iters == 5
    assert t1.timing["generation"].first_calls == 1 and t1.timing["forward"].min_iters == 5
    undecided = {r.case.model for r in results if r.undecided_by == "max-repeats"}
    assert undecided == {"resnet-50", "smollm2-135m"} and len(t1.undecided) == 2
    stored = json.loads(sqlite3.connect(main_db).execute("SELECT data FROM results LIMIT 1").fetchone()[0])
    assert not {"status", "stats", "env", "timing_policy", "flops", "flags"} & set(stored)  # derived when read
    assert not {"tag", "looks", "design", "pair_from", "undecided_by"} & set(stored["repeats"][0])  # the run's
    assert stored["repeats"][0]["environment"]["torch"]
    peaks = [rep.host_peaks for r in results for rep in r.repeats if rep.host_peaks]
    assert len(peaks) == 2 and all(p.stream_gbs and p.dtype == "float32" for p in peaks)  # one per run


def test_a_run_is_stored_once_with_its_command_spec_and_timing(tmp_path, main_here):
    code, _, err = main_here("run", "--model", "fault-ok", "--variant", "eager", "default", "--backend", "eager",
                             "--iters", "3", "--warmup", "0", "--device", "cpu", "--repeats", "2", "--quiet",
                             "--format", "csv", "--tag", "nightly-1", "--isolation", "inline", "--db", "r.db")
    assert code == 0, err
    with Store.open(str(tmp_path / "r.db"), write=False) as store:
        (run,) = store.runs().values()
        results = store.results()
    assert run.command.startswith("compilebench run --model fault-ok") and run.tag == "nightly-1" and run.ended
    assert run.spec["models"] == ["fault-ok"] and run.spec["device"] == "cpu" and run.isolation == "inline"
    assert run.timing["forward"].to_dict() == {"iters": 3, "warmup": 0, "max_time_s": None, "min_iters": 3,
                                               "first_calls": 5, "warmup_s": 0.0, "warmup_cap_s": 10.0}
    assert {rep.run for r in results for rep in r.repeats} == {run.run_id}
    assert all(r.tag == "nightly-1" and r.timing.iters == 3 for r in results)
    assert all(rep.environment.device == "cpu" and rep.environment.torch for r in results for rep in r.repeats)


def test_result_holds_no_dict_but_the_fields_a_newer_version_wrote():
    kinds = {f.name: f.type for f in dataclasses.fields(Result)}
    assert [name for name, kind in kinds.items() if "dict" in str(kind)] == ["extra", "case_extra"]
    assert "environment" in {f.name for f in dataclasses.fields(Repeat)}


def _fake_gpu_slots(monkeypatch, drivers: dict[str, str]):
    """Two H100s of one machine as --gpus slots; each 'worker' measures 2 ms on the GPU its slot shows it, reading
    its own environment (the driver of each GPU as given). Each slot's first job waits for the other's (a
    handshake): both GPUs take a repeat."""
    from test_dispatch import fake_two_of_four_gpus

    from compilebench.run import devices

    fake_two_of_four_gpus(monkeypatch)
    found = devices._answer("cuda", "all")
    slots = devices.slots(found["gpus"], 10, found["gpu_ids"], gpu_cpus=found["gpu_cpus"]).slots
    both = threading.Barrier(2)

    def worker(slot):
        first = [True]

        def run(job, env, on_phase):
            if first[0]:
                first[0] = False
                both.wait(timeout=60)
            gpu = env["CUDA_VISIBLE_DEVICES"]
            seen = Environment(hostname="h", device="cuda:0", device_name="NVIDIA H100 80GB HBM3", torch="2.13",
                               transformers="5", gpu_uuid=gpu, driver=drivers[gpu])
            reps = [Repeat(index=job.repeat, environment=seen) for _ in job.cases]
            for rep in reps:
                rep.set_samples([2_000_000] * 3)
            return reps
        return run

    for slot in slots:
        slot.run, slot.prepare = worker(slot), lambda repeats, environments: None  # no launcher: no real worker
    return slots, Environment.from_dict(found["env"])


@pytest.mark.parametrize("drivers", [{"GPU-2222": "550.54", "GPU-3333": "550.54"},
                                     {"GPU-2222": "550.54", "GPU-3333": "560.28"}], ids=["one driver", "two drivers"])
def test_a_gpus_run_records_each_repeats_own_gpu_and_the_report_names_both(monkeypatch, tmp_path, drivers):
    from compilebench.run import dispatch, sweep

    slots, env = _fake_gpu_slots(monkeypatch, drivers)
    spec = RunSpec(models=("fault-ok",), variants=("eager",), device="cuda:0", repeats=4)
    target = dispatch.Target("GPUs all", env.machine_id, env)
    with Store.open(str(tmp_path / "r.db")) as store:
        sweep.run(spec, store, dispatch.LocalPool(slots), [target], Run(timing={"forward": spec.timing.resolve(
            "forward", "cuda:0")}), quiet=True)
        (r,) = store.results()
    assert sorted(rep.environment.gpu_uuid for rep in r.repeats).count("GPU-2222") >= 1
    assert set(r.gpus) == {"GPU-2222", "GPU-3333"}
    (table,) = details.environment_tables([r])
    said = {row[0]: row[1] for row in table.rows}
    assert set(said["gpu_uuid"].split(", ")) == {"GPU-2222", "GPU-3333"}
    row = flat.rows(View([r]))[0]
    assert set(row["env_gpu_uuid"].split(" | ")) == {"GPU-2222", "GPU-3333"}
    if len(set(drivers.values())) == 1:
        assert r.disagreements == {} and table.notes == [] and row["env_driver"] == "550.54"
    else:  # what the repeats must share and do not: said, never the first shown alone
        assert set(r.disagreements["driver"]) == {"550.54", "560.28"}
        assert "its repeats ran with different driver" in table.notes[0] and " | " in row["env_driver"]


def test_two_machines_of_one_hardware_give_one_speedup_in_the_table_the_csv_and_check():
    """Before: the table read box-b's compiled result against the newest eager of the hardware (box-a's, 20 ms:
    2.5x), the CSV against box-b's own (10 ms: 1.25x)."""
    a = {**fr.A100, "hostname": "box-a"}
    b = {**fr.A100, "hostname": "box-b"}
    results = [fr.result("vit", 1, "eager", 10.0, env=b), fr.result("vit", 1, "eager", 20.0, env=a),
               fr.result("vit", 1, "default", 5.0, env=a), fr.result("vit", 1, "default", 8.0, env=b)]
    view = View(results)
    (group,) = [g for g in view.groups]
    column = group.compiled_columns[0]
    in_table = group.speedup("vit", column)
    assert group.result("vit", column).env.hostname == "box-b"
    in_csv = next(row for row in flat.rows(view) if row["variant"] == "default" and "box-b" in row["machine_id"])
    mine = compare.select(results, "box-b")
    again = [dataclasses.replace(r, result_id=f"again-{r.result_id}") for r in mine]  # measured twice
    lines, _ = check.check(mine, again)
    (line,) = [l for l in lines if l.metric == "speed-up over eager"]
    assert in_table.value == pytest.approx(1.25, rel=1e-6)
    assert in_csv["speedup"] == pytest.approx(in_table.value) and line.candidate == f"{in_table.value:.2f}x"
    assert tables.guide_tables(view)[0].records()[0][column.header].startswith("8.000")


def test_the_pairing_keeps_to_its_scope():
    old = {**fr.A100, "torch": "2.12.0+cu118", "hostname": "box-a"}
    eager_old = fr.result("vit", 1, "eager", 10.0, env=old)
    eager = fr.result("vit", 1, "eager", 12.0, env={**fr.A100, "hostname": "box-a"})
    other_box = fr.result("vit", 1, "eager", 11.0, env={**fr.A100, "hostname": "box-b"})
    compiled = fr.result("vit", 1, "default", 6.0, env={**fr.A100, "hostname": "box-b"})
    float_eager = fr.result("vit", 1, "eager", 9.0, quantize="none")
    quantized = fr.result("vit", 1, "default", 4.0, quantize="int8-dynamic")
    found = pairing.Pairing([eager_old, eager, other_box, compiled, float_eager, quantized])
    assert found.of(compiled) is other_box  # its own machine's, of the hardware's and torch's
    assert found.of(eager) is None  # eager is compared against nothing
    by_machine = pairing.Pairing([eager_old, eager, compiled], pairing.MACHINE)
    assert by_machine.of(compiled) is None  # another host is another machine
    assert pairing.Pairing([eager_old, compiled]).of(compiled) is None  # another torch
    assert found.of(quantized, pairing.FLOAT) is float_eager  # the float eager baseline: quantize none, uncompiled
    assert found.of(quantized) is None  # no eager int8-dynamic here


def test_a_result_written_before_runs_were_recorded_reads_as_one_run_and_says_none():
    release = Path(__file__).parent / "data" / "release-0.2.0" / "results.db"
    (r, *_) = data.load([str(release)])
    assert r.runs and not any(run.recorded for run in r.runs) and r.run_ids == set() and r.tag is None
    assert r.timing.iters == 5 and r.round_figures() == {}


def test_a_newer_schema_is_refused_in_one_line(tmp_path, main_here):
    path = tmp_path / "r.db"
    Store.open(str(path)).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(schema.SCHEMA_VERSION + 1),))
    conn.commit()
    conn.close()
    before = path.read_bytes()
    code, _, err = main_here("report", str(path), "--out", str(tmp_path / "out"))
    assert code == 2 and "newer compilebench" in err and len(err.strip().splitlines()) == 1
    assert path.read_bytes() == before and not (tmp_path / "out").exists()
    assert not os.path.exists(schema.backup_path(str(path), schema.SCHEMA_VERSION + 1))
