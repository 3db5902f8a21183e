"""Every result's command measures its case again: parsed back by the real command line, it asks for the very case
(its resume key) with the same timing and number of processes; pasted, it re-measures the case into a new file that
`compare` matches; `run --from-row ID` re-measures the row into its own file."""

from __future__ import annotations

import csv
import dataclasses
import json
import shlex
import sys

import pytest
from conftest import stored
from fakeresults import CPU, result

from compilebench import cli
from compilebench.cli import options, run as runcmd
from compilebench.core import reproduce, settings, spec as specmod, traffic
from compilebench.core.case import Case
from compilebench.core.job import TimingPolicy
from compilebench.core.run import Run
from compilebench.core.spec import ModelKind
from compilebench.core.variant import Variant
from compilebench.report import details, flat
from compilebench.report.view import View
from compilebench.storage.store import Store

KINDS = {"vit": ModelKind(), "gpt2": ModelKind("generation", 8), "sd-1.5": ModelKind("image", default_steps=50)}


def parsed_cases(command: str) -> tuple[list[Case], specmod.RunSpec, object]:
    """The cases the command asks for, as `run` (or `shapes`) would measure them."""
    words = shlex.split(command)
    assert words[0] == reproduce.PROGRAM
    args = options.parser(cli._commands()).parse_args(words[1:])
    if args.command == "shapes":
        spec = runcmd.run_spec(args, shapes=True, variants=specmod.shape_variants(args.mode))
    else:
        spec = runcmd.run_spec(args)
    return spec.cases(KINDS), spec, args


def reproduced(r) -> tuple[list[Case], specmod.RunSpec]:
    command = reproduce.command(r)
    assert command, reproduce.why_not(r)
    cases, spec, _ = parsed_cases(command)
    assert r.case_key in {c.key() for c in cases}, command
    assert spec.repeats == len(r.repeats) and spec.max_repeats is None, command  # a fixed design of as many
    return cases, spec


def _result(model="vit", mode="default", variant=None, timing=None, device="cpu", **fields):
    batch = max(traffic.Shape.parse(s).batch for s in fields["shapes"]) if "shapes" in fields else 4
    case = result(model, batch, mode, 10.0, env={**CPU, "device": device}, **fields).case
    if variant is not None:
        case = dataclasses.replace(case, variant=variant)
    # the run that measured it, its timing resolved as a plan resolves it (none given: the defaults)
    run = Run(timing={case.timed_unit: TimingPolicy(**(timing or {})).resolve(case.timed_unit, device)})
    r = result(model, batch, mode, 10.0, env={**CPU, "device": device}, run=run, **fields)
    r.case = case
    return r


def _examples():
    """One result per setting at its example value (the value tests follow everywhere a setting must reach)."""
    for f in settings.fields():
        value = f.metadata["example"]
        if f.name == "inputs":
            continue  # a model your code builds: no command (test below)
        extra = {"dtype": "bfloat16"} if f.name == "autocast" else {}
        model = {"generation": "gpt2", "image": "sd-1.5"}.get(f.metadata["only"], "vit")
        if model == "gpt2":
            extra = {"prompt_len": 8, "new_tokens": 32, **extra}
        yield pytest.param(model, {**extra, f.name: value}, id=f.name)


@pytest.mark.parametrize("model, fields", list(_examples()))
def test_each_setting_comes_back_from_the_command(model, fields):
    reproduced(_result(model, **fields))


COMPILED = [
    Variant("default", fullgraph=True, dynamic=False, options=(("freezing", True), ("max_autotune_gemm", False))),
    Variant("max-autotune", backend="aot_eager", dynamic=True),
    Variant("default", scope="regions", regions=("ViTLayer",)),
    Variant("aot-inductor", options=(("freezing", True),)),
    Variant("reduce-overhead"),
    Variant("eager", cache="static"),
    Variant("default", decoder=True),  # a pipeline's decoder compiled too
]


@pytest.mark.parametrize("variant", COMPILED, ids=lambda v: v.label)
def test_each_way_of_compiling_comes_back_from_the_command(variant):
    model = "gpt2" if variant.cache else "sd-1.5" if variant.decoder else "vit"
    fields = {"prompt_len": 8, "new_tokens": 32} if variant.cache else {"steps": 50} if variant.decoder else {}
    reproduced(_result(model, variant=variant, **fields))


def test_an_interleaved_case_is_measured_beside_another_variant():
    for mode in ("eager", "max-autotune"):
        cases, spec = reproduced(_result(mode=mode, interleave=True))
        assert len(spec.variants) == 2 and spec.interleave


def test_the_timing_and_the_environment_come_back():
    timing = {"iters": 40, "warmup": 2, "max_time_s": 5.0, "min_iters": 7, "first_calls": 3, "warmup_s": 0.5,
              "warmup_cap_s": 2.5}
    r = _result(timing=timing, environment="new")
    for rep in r.repeats:
        rep.environment = dataclasses.replace(rep.environment, environment_python=sys.executable,
                                              environment_set="OMP_NUM_THREADS=1 FOO=a=b")
    _, spec = reproduced(r)
    assert dataclasses.asdict(spec.timing) == timing
    (env,) = spec.environments
    assert (env.name, dict(env.set)) == ("new", {"OMP_NUM_THREADS": "1", "FOO": "a=b"})
    assert "--db" not in reproduce.command(r)  # measured into the user's own file


def test_default_timing_is_left_out_and_the_device_index_dropped():
    r = _result(timing={"iters": None, "warmup": 10, "min_iters": 10, "first_calls": 5}, device="cuda:3")
    assert reproduce.command(r) == "compilebench run --model vit --batch-size 4 --variant default --device cuda " \
                                   "--repeats 3"


@pytest.mark.parametrize("variant, served", [
    (Variant(), ("b1:640x480", "b1:800x600", "b4:640x480", "b4:800x600")),
    (Variant("default", dynamic=False), ("b1", "b4", "b16")),
    (Variant("reduce-overhead", dynamic=True, fullgraph=True), ("b1", "b2")),
    (Variant("default", mark_dynamic=True), ("b2", "b1")),
    (Variant("default", dynamic=False, pad_to=(4, 16)), ("b1", "b3", "b16")),
    (Variant("default", dynamic=False, scope="regions"), ("b1", "b4")),  # --regional
])
def test_a_shapes_result_gives_the_shapes_command(variant, served):
    r = _result(variant=variant, shapes=served)
    assert reproduce.command(r).startswith("compilebench shapes --model vit --batch-size")
    reproduced(r)


def test_a_text_shapes_result_serves_its_prompt_lengths():
    r = _result("gpt2", variant=Variant("default", dynamic=False), shapes=("b1:p16", "b1:p64"), prompt_len=64,
                new_tokens=32)
    assert "--prompt-len 16 64" in reproduce.command(r)
    reproduced(r)


@pytest.mark.parametrize("hotswap", [False, True])
def test_a_pipelines_lora_shapes_result_serves_its_adapters(hotswap):
    r = _result("sd-1.5", variant=Variant("default", dynamic=False, lora_hotswap=hotswap), steps=2,
                shapes=("b1:64x64:r4", "b1:64x64:r8", "b1:96x96:r4", "b1:96x96:r8"))
    command = reproduce.command(r)
    assert "--image-size 64x64 96x96 --lora 4 8 --dynamic false" in command
    assert ("--lora-hotswap" in command) == hotswap
    reproduced(r)


def test_a_model_your_code_measured_has_no_command_and_says_why():
    in_process = _result()
    in_process.inline_model = True
    assert reproduce.command(in_process) is None and "your Python process" in reproduce.why_not(in_process)
    built = _result(model="mymodels:make", inputs="mymodels:inputs")
    assert reproduce.command(built) is None and "compilebench.benchmark" in reproduce.why_not(built)


def test_the_command_is_in_the_details_table_csv_and_json(tmp_path):
    rs = [_result(mode="eager"), _result()]
    view = View(rs)
    (row,) = [r for r in details.details_table(view).records() if r["variant"] == "compile"]
    assert row["reproduce"] == reproduce.command(rs[1])
    by_id = {r["result_id"]: r for r in flat.rows(view)}
    assert by_id[rs[1].result_id]["reproduce"] == reproduce.command(rs[1])
    assert json.loads(flat.to_json(flat.rows(view)))[1]["reproduce"] == reproduce.command(rs[1])


def test_from_row_refuses_an_unknown_id_and_other_settings(tmp_path, main_here):
    r = _result()
    with Store.open(str(tmp_path / "r.db")) as store:
        store.add(r)
    code, _, err = main_here("run", "--from-row", "beef", "--db", "r.db")
    assert code == 2 and "no result whose id starts with 'beef' in r.db" in err
    code, _, err = main_here("run", "--from-row", r.result_id[:8], "--db", "r.db", "--dtype", "float16")
    assert code == 2 and "--from-row measures the row as it was measured: drop --dtype" in err
    code, _, err = main_here("run", "--from-row", r.result_id[:8], "--db", "missing.db")
    assert code == 2 and "missing.db" in err


def test_the_pasted_command_and_from_row_measure_the_case_again(tmp_path, main_here):
    code, _, err = main_here("run", "--model", "fault-ok", "--variant", "eager", "--iters", "3", "--warmup", "0",
                             "--min-iters", "1", "--device", "cpu", "--isolation", "inline", "--repeats", "1",
                             "--db", "r.db", "--quiet", "--format", "csv")
    assert code == 0, err
    (row,) = flat_rows(tmp_path / "report" / "results.csv")
    words = shlex.split(row["reproduce"])
    code, _, err = main_here(*words[1:], "--db", "new.db", "--quiet", "--format", "csv")  # pasted, into a new file
    assert code == 0, err
    code, out, err = main_here("compare", "r.db", "new.db")
    assert code == 0 and "| Test/ok | 1 | no compile | " in out, err  # the two files' case matched

    code, _, err = main_here("run", "--from-row", row["result_id"][:8], "--db", "r.db", "--quiet", "--format", "csv")
    assert code == 0 and f"measuring result {row['result_id']} again: {row['reproduce']}" in err, err
    first, again = stored(tmp_path / "r.db")  # a new result of the same case, in the row's own file
    assert first["case_key"] == again["case_key"] and first["result_id"] == row["result_id"]


def flat_rows(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))
