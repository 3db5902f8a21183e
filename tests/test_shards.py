"""Issue 58: a run split into shards (--shard i/N) that every machine computes the same, balanced by expected cost,
and a report over the shard files that says whether it is the whole run."""

from __future__ import annotations

import csv
import json
import os
import re
import sqlite3

import pytest
from fakeresults import CPU, result

from compilebench.core import shards, spec as specmod
from compilebench.core.errors import UserError
from compilebench.core.run import Run
from compilebench.core.shards import Shard, ShardPlan
from compilebench.report import data
from compilebench.storage.store import Store

def of_files(paths: list[str], results: list) -> list[shards.Coverage]:
    """What a report over these files (or folders of them) says of their shards."""
    return shards.coverage(data.read(paths)[1], results)


# -- which shard: given, or the scheduler's -------------------------------------------------------------------


def test_a_shard_is_given_as_i_of_n_counting_from_one():
    assert Shard.parse("2/8") == Shard(2, 8)
    assert Shard.parse(" 8/8 ") == Shard(8, 8)


@pytest.mark.parametrize("given, says", [
    ("0/3", "out of range (shards count from 1 to 3)"), ("4/3", "out of range"), ("3", "expected i/N"),
    ("a/3", "i must be a whole number"), ("1/0", "N must be at least 1"), ("1/x", "N must be a whole number"),
])
def test_a_malformed_or_out_of_range_shard_is_one_clear_line(given, says):
    with pytest.raises(UserError, match=says.replace("(", r"\(").replace(")", r"\)")):
        Shard.parse(given)


def test_slurm_arrays_count_from_their_first_index():
    env = {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "4"}
    assert Shard.parse("auto", env) == Shard(1, 4)
    assert Shard.parse("auto", {**env, "SLURM_ARRAY_TASK_ID": "3"}) == Shard(4, 4)
    assert Shard.parse("auto/4", {**env, "SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "5"}) == Shard(1, 4)
    with pytest.raises(UserError, match="Slurm's array has 4 tasks"):
        Shard.parse("auto/3", env)


def test_a_kubernetes_indexed_job_gives_the_index_and_the_command_the_count():
    assert Shard.parse("auto/3", {"JOB_COMPLETION_INDEX": "2"}) == Shard(3, 3)
    with pytest.raises(UserError, match="does not say how many shards"):
        Shard.parse("auto", {"JOB_COMPLETION_INDEX": "2"})
    with pytest.raises(UserError, match="out of range"):
        Shard.parse("auto/3", {"JOB_COMPLETION_INDEX": "3"})


def test_auto_with_no_scheduler_says_to_give_i_of_n():
    with pytest.raises(UserError, match="neither SLURM_ARRAY_TASK_ID .* nor JOB_COMPLETION_INDEX .* give i/N"):
        Shard.parse("auto", {})


def test_what_only_says_where_a_shard_writes_is_not_part_of_its_plan():
    one = ["compilebench", "run", "--suite", "quick", "--shard", "1/3", "--db", "s1.db", "--quiet", "--out=r1"]
    two = ["compilebench", "run", "--suite", "quick", "--shard=2/3", "--db=s2.db", "--format", "md"]
    assert shards.shared_command(one) == shards.shared_command(two) == "compilebench run --suite quick"


# -- the partition ---------------------------------------------------------------------------------------------


def test_groups_go_longest_first_to_the_least_loaded_shard():
    placed = shards.partition({"detr": 300, "resnet": 160, "mobilenet": 150, "vit": 140, "beit": 10}, 2)
    assert placed == {"detr": 1, "resnet": 2, "mobilenet": 2, "vit": 1, "beit": 2}


def test_the_partition_is_the_same_whatever_order_the_groups_come_in():
    groups = {f"m{i}": float(i % 4) for i in range(20)}
    assert shards.partition(groups, 3) == shards.partition(dict(reversed(groups.items())), 3)


# Leaf modules and parameters (millions) of the guide's models, as their skeletons on the meta device count them
# (benchmarks/shards.py builds them): the estimate's inputs, without seconds of building here.
SIZES = {"vit": (124, 86.6), "segformer": (137, 3.8), "owlvit": (235, 153.2), "beit": (149, 102.6),
         "detr": (330, 41.5), "convnext": (227, 197.8), "resnet-50": (187, 25.6), "mask2former": (334, 47.4),
         "maskformer": (442, 101.8), "deeplabv3-mobilenet": (151, 2.5), "detr-resnet-101": (517, 60.5),
         "conditional-detr": (359, 43.4)}


def test_the_seed_suites_plan_splits_into_balanced_shards_keeping_each_models_pairs_together(monkeypatch):
    from compilebench.run import costs, refusals

    monkeypatch.setattr(costs, "sizes", lambda models, size: {m: (SIZES[m][0], int(SIZES[m][1] * 1e6)) for m in models})
    spec = specmod.asked(suite="seed", device="cpu")
    models = refusals.models(spec)
    cases = spec.cases(models)
    made = [costs.plan_of(Shard(i, 3), spec, cases, models, None, "compilebench run --suite seed", "0.3.0")
            for i in (1, 2, 3)]
    assert len({m.plan for m in made}) == 1  # every shard computes the same plan
    mine = [[c for c in cases if m.mine(c.key())] for m in made]
    assert sorted(c.key() for part in mine for c in part) == sorted(c.key() for c in cases)  # each case once
    for part in mine:  # an eager twin and its compiled variants (what a verdict reads) in one shard
        assert {c.eager_key() for c in part} == {c.key() for c in part if not c.variant.compiled}
    expected = made[0].expected()
    assert max(expected) / min(expected) < 1.25
    assert made[0].costs_from == "estimate"


def test_a_results_file_as_history_balances_by_what_each_case_took(tmp_path, monkeypatch):
    from compilebench.run import costs, refusals

    monkeypatch.setattr(costs, "sizes", lambda models, size: {m: (SIZES[m][0], int(SIZES[m][1] * 1e6)) for m in models})
    spec = specmod.asked(models=["resnet-50", "vit", "detr"], variants=["eager", "default"], device="cpu")
    models = refusals.models(spec)
    cases = spec.cases(models)
    history = tmp_path / "history.db"
    with Store.open(str(history)) as store:
        for c in cases:
            r = result(c.model, 1, c.variant.name, 10.0, env=CPU)
            for rep in r.repeats:  # ViT's compile took the longest here, whatever its size says
                rep.phases = {"start": 1.0, "compile": 500.0 if c.model == "vit" and c.variant.compiled else 5.0}
            store.add(r)
    seconds, source = costs.expected(spec, cases, models, str(history))
    assert source == str(history)
    vit = [k for k in seconds if '"vit"' in k]
    assert max(seconds, key=seconds.get) in vit
    assert seconds[max(vit, key=seconds.get)] == pytest.approx(3 * 501.0)


# -- a report over the shard files -----------------------------------------------------------------------------


def _shard_files(tmp_path, present=(1, 2, 3), command="compilebench run --suite quick", version="0.3.0",
                 tag="abc", measured=None):
    """Three shards of one plan of six cases (two a model), each shard's run and results in its own file."""
    models = ["resnet-50", "deeplabv3-mobilenet", "detr"]
    groups = {m: {_result_of(f"{m}|eager").case_key: 10.0, _result_of(f"{m}|default").case_key: 100.0}
              for m in models}
    names = {_result_of(f"{m}|{v}").case_key: f"{m} b1 {v}" for m in models for v in ("eager", "default")}
    paths = []
    for i in present:
        plan = ShardPlan.made(Shard(i, 3), groups, command, version, names=names)
        run = Run(tag=tag, compilebench=version, shard=plan.to_dict())
        path = tmp_path / f"shard{i}.db"
        with Store.open(str(path)) as store:
            store.add_run(run)
        paths.append(str(path))
    return paths, plan


def test_all_shards_present_and_measured_is_complete(tmp_path):
    paths, plan = _shard_files(tmp_path)
    measured = [_result_of(plan.names[k].replace(" b1 ", "|")) for k in plan.cases]
    found = of_files(paths, measured)
    assert len(found) == 1 and found[0].complete
    assert "3 of 3 present, every planned case measured: complete" in found[0].describe()


def test_a_missing_shard_file_names_the_shard_and_its_cases(tmp_path):
    paths, plan = _shard_files(tmp_path, present=(1, 3))
    missing_shard = [k for k, s in plan.cases.items() if s == 2]
    measured = [_result_of(plan.names[k].replace(" b1 ", "|")) for k, s in plan.cases.items() if s != 2]
    said = of_files(paths, measured)[0].describe()
    assert "2 of 3 present; INCOMPLETE: missing shard(s) 2/3" in said
    assert f"{len(missing_shard)} of 6 planned cases without a result: " in said
    for k in missing_shard:
        assert plan.names[k] in said


def test_shards_of_two_plans_under_one_tag_are_refused(tmp_path, main_here):
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir(), b.mkdir()
    _shard_files(a, present=(1, 2))
    _shard_files(b, present=(3,), command="compilebench run --suite seed")
    with pytest.raises(UserError, match=r"shards of different plans under tag 'abc' \('compilebench run --suite "
                                        r"quick' and 'compilebench run --suite seed'\)"):
        of_files([str(a), str(b)], [])
    code, out, err = main_here("report", str(a), str(b), "--out", str(tmp_path / "report"))
    assert code == 2 and "shards of different plans" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "report").exists()


def test_shards_of_another_compilebench_are_refused(tmp_path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir(), b.mkdir()
    _shard_files(a, present=(1,))
    _shard_files(b, present=(2,), version="0.4.0")
    with pytest.raises(UserError, match="compilebench 0.3.0 and 0.4.0"):
        of_files([str(a), str(b)], [])


def _result_of(name: str):
    """'detr|default': a result of that case."""
    model, variant = name.split("|")
    return result(model, 1, variant, 10.0, env=CPU)


# -- end to end ------------------------------------------------------------------------------------------------


def test_shards_then_one_report_give_the_unsharded_runs_cases(tmp_path, main_here):
    """Shard commands, then a report over the folder of their files: every case once, complete; with one file
    left out, its cases named."""
    common = ["run", "--model", "resnet-50", "segformer", "--variant", "eager", "--tiny", "--repeats", "1", "--iters",
              "2", "--warmup", "0", "--isolation", "inline", "--quiet", "--format", "md"]
    (tmp_path / "shards").mkdir()
    for i in (1, 2):
        code, _, err = main_here(*common, "--shard", f"{i}/2", "--db", f"shards/s{i}.db", "--out", f"r{i}")
        assert code == 0, err
    models = []
    for i in (1, 2):
        with Store.open(str(tmp_path / f"shards/s{i}.db"), create=False, write=False) as store:
            models += [r.case.model for r in store.results()]
    assert sorted(models) == ["resnet-50", "segformer"]  # each case once, in one shard
    code, out, err = main_here("report", "shards", "--out", "all", "--format", "md")
    assert code == 0, err
    assert "2 of 2 present, every planned case measured: complete" in " ".join(out.split())
    assert "complete" in (tmp_path / "all" / "report.md").read_text()
    code, out, _ = main_here("report", "shards/s1.db", "--out", "some", "--format", "md")
    said = " ".join(out.split())
    assert "missing shard(s) 2/2" in said and "1 of 2 planned cases without a result" in said


def test_a_shard_out_of_range_writes_nothing(tmp_path, main_here):
    code, out, err = main_here("run", "--model", "resnet-50", "--tiny", "--shard", "4/3", "--db", "x.db")
    assert code == 2 and "shard 4 is out of range" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.db").exists()
    code, _, err = main_here("run", "--model", "resnet-50", "--tiny", "--shard-history", "h.db", "--db", "x.db")
    assert code == 2 and "--shard-history balances shards: give --shard i/N too" in err


def test_a_shard_with_no_case_of_its_own_still_records_its_run(tmp_path, main_here):
    code, _, err = main_here("run", "--model", "resnet-50", "--variant", "eager", "--tiny", "--repeats", "1",
                             "--iters", "2", "--isolation", "inline", "--quiet", "--shard", "2/2", "--db", "x.db")
    assert code == 0, err
    with sqlite3.connect(tmp_path / "x.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
        assert conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 0


# -- published as a Hub dataset, and read back -------------------------------------------------------------------


def _results_file(tmp_path, name="a.db", tag="nightly"):
    """A results file of two cases (eager and compiled) and their run."""
    run = Run(tag=tag, compilebench="0.3.0")
    path = tmp_path / name
    with Store.open(str(path)) as store:
        store.add_run(run)
        for mode, ms in (("eager", 20.0), ("default", 10.0)):
            store.add(result("resnet-50", 1, mode, ms, env=CPU, run=run, compile_s=30.0))
    return path


def test_a_published_folder_reports_the_same_figures_as_its_results_file(tmp_path, main_here):
    db = _results_file(tmp_path)
    code, _, err = main_here("publish", db, "--out", "pub")
    assert code == 0, err
    pub = tmp_path / "pub"
    names = sorted(p.relative_to(pub).as_posix() for p in pub.rglob("*") if p.is_file())
    assert "README.md" in names and "compilebench.json" in names and "report/report.html" in names
    assert len([n for n in names if n.startswith("data/") and n.endswith(".jsonl")]) == 1  # one run, one file
    card = (pub / "README.md").read_text()
    assert card.startswith("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/*.jsonl")
    for source in (str(db), "pub"):
        code, _, err = main_here("report", source, "--out", f"r-{source[-3:]}", "--format", "csv")
    with open(tmp_path / f"r-{str(db)[-3:]}" / "results.csv") as a, open(tmp_path / "r-pub" / "results.csv") as b:
        from_db, from_pub = list(csv.DictReader(a)), list(csv.DictReader(b))
    named = {"machine_id", "env_hostname"}  # issue 65: the machine's name is a salted key when published
    assert [{k: v for k, v in r.items() if k not in named} for r in from_db] == \
        [{k: v for k, v in r.items() if k not in named} for r in from_pub]
    assert {r["env_hostname"] for r in from_pub} == {"machine-" + r["env_hostname"].split("-")[1] for r in from_pub}
    assert "| 2.00x |" in card  # the same figures; the card's summary says the speed-up


def test_publishing_again_into_the_folder_leaves_only_the_runs_given(tmp_path, main_here):
    a, b = _results_file(tmp_path, "a.db", tag="one"), _results_file(tmp_path, "b.db", tag="two")
    assert main_here("publish", a, b, "--out", "pub")[0] == 0
    assert len(list((tmp_path / "pub" / "data").glob("*.jsonl"))) == 2
    assert main_here("publish", b, "--out", "pub")[0] == 0
    (left,) = (tmp_path / "pub" / "data").glob("*.jsonl")
    assert {r.case.variant.mode for r in data.load([str(tmp_path / "pub")])} == {"eager", "default"}
    assert '"tag": "two"' in left.read_text()


def test_a_published_folder_is_a_side_of_compare_and_check(tmp_path, main_here):
    db, other = _results_file(tmp_path), _results_file(tmp_path, "b.db", tag="two")
    assert main_here("publish", db, "--out", "pub")[0] == 0
    code, out, err = main_here("compare", "pub", str(other))
    assert code == 0, err
    assert "resnet-50" in out.lower() or "ResNet" in out
    code, out, err = main_here("check", str(other), "--baseline", "pub")
    assert code == 0, err


def test_datasets_loads_a_published_folder_as_a_table(tmp_path, main_here, monkeypatch):
    import datasets
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert main_here("publish", _results_file(tmp_path), "--out", "pub")[0] == 0
    table = datasets.load_dataset(str(tmp_path / "pub"), cache_dir=str(tmp_path / "cache"))["train"]
    assert table.num_rows == 2
    assert sorted(table["variant"]) == ["default", "eager"] and set(table["model"]) == {"resnet-50"}
    assert "reproduce" in table.column_names and "result" in table.column_names


def test_push_offline_says_in_one_line_the_folder_is_ready(tmp_path, main_here, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    code, out, err = main_here("publish", _results_file(tmp_path), "--out", "pub", "--push", "me/results")
    assert code == 0
    last = err.strip().splitlines()[-1]
    assert last.startswith("offline (HF_HUB_OFFLINE is set): nothing pushed; pub is ready to push:")
    assert "--push me/results" in last and "hf upload me/results pub --repo-type dataset" in last


@pytest.mark.parametrize("args, says", [
    (["--push", "not a repo"], "--push 'not a repo': expected a dataset id ORG/NAME"),
    (["--out", "busy"], "--out 'busy' holds other files"),
    (["--out", "busy/mine.txt"], "--out 'busy/mine.txt' is a file"),
])
def test_bad_publish_input_is_one_line_and_writes_nothing(tmp_path, main_here, args, says):
    db = _results_file(tmp_path)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("keep")
    given = ["--out", "pub", *args] if args[0] != "--out" else args
    code, _, err = main_here("publish", db, *given)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "pub").exists() and os.listdir(tmp_path / "busy") == ["mine.txt"]


def test_a_newer_or_malformed_published_folder_is_refused_in_one_line(tmp_path, main_here):
    db = _results_file(tmp_path)
    assert main_here("publish", db, "--out", "pub")[0] == 0
    marker = tmp_path / "pub" / "compilebench.json"
    marker.write_text(json.dumps({"format": 99, "compilebench": "9.0"}))
    code, _, err = main_here("report", "pub", "--out", "r1")
    assert code == 2 and "format 99; this version reads format 1 and older" in err
    marker.write_text(json.dumps({"format": 1}))
    data = next((tmp_path / "pub" / "data").glob("*.jsonl"))
    data.write_text(data.read_text() + "{not json\n")
    code, _, err = main_here("report", "pub", "--out", "r2")
    assert code == 2 and f"{data.name}:3: not a published result" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r1").exists() and not (tmp_path / "r2").exists()


@pytest.mark.slow
def test_the_docs_submitit_snippet_runs_the_shards_with_the_local_executor(tmp_path, monkeypatch):
    """docs/sweeps.md's submitit snippet as written, its command cut to two tiny eager cases in two shards."""
    import submitit
    page = open(os.path.join(os.path.dirname(__file__), "..", "docs", "sweeps.md")).read()
    snippet = next(body for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", page, re.S | re.M)
                   if lang == "python" and "import submitit" in body)
    command = 'COMMAND = [sys.executable, "-m", "compilebench", "run", "--suite", "quick", "--quiet"]'
    assert command in snippet and "N = 3" in snippet
    tiny = ('COMMAND = [sys.executable, "-m", "compilebench", "run", "--model", "resnet-50", "segformer", "--variant", '
            '"eager", "--tiny", "--repeats", "1", "--iters", "2", "--warmup", "0", "--isolation", "inline", "--quiet"]')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(submitit.AutoExecutor, "which", staticmethod(lambda: "local"))  # no sbatch here: as said
    exec(snippet.replace(command, tiny).replace("N = 3", "N = 2"), {"__name__": "snippet"})
    results = data.load([str(tmp_path / "shards")])
    assert sorted(r.case.model for r in results) == ["resnet-50", "segformer"]
    (found,) = of_files([str(tmp_path / "shards")], results)
    assert found.complete and sorted(found.shards) == [1, 2]


def test_the_python_api_takes_a_shard_as_the_command_line_does(tmp_path):
    import compilebench

    empty = compilebench.benchmark("resnet-50", variants=("eager",), model_size="tiny", repeats=1, iters=2, device="cpu",
                                   db=str(tmp_path / "s2.db"), shard="2/2")  # the one model's case is shard 1's
    assert empty.results == []
    with Store.open(str(tmp_path / "s2.db"), create=False, write=False) as store:
        (run,) = store.runs().values()
    assert (run.shard["index"], run.shard["count"]) == (2, 2) and list(run.shard["cases"].values()) == [1]
    with pytest.raises(UserError, match="out of range"):
        compilebench.benchmark("resnet-50", shard="3/2", device="cpu", db=str(tmp_path / "x.db"))
    assert not (tmp_path / "x.db").exists()


def test_the_shards_of_a_search_are_whole_when_every_shard_is_there(tmp_path):
    """tune --shard: which configurations a budget reaches is the search's to decide; what a report can say is
    whether every shard's file is there."""
    paths = []
    for i in (1, 3):
        path = tmp_path / f"t{i}.db"
        with Store.open(str(path)) as store:
            plan = ShardPlan.of_search(Shard(i, 3), "compilebench tune --model vit", "0.3.0")
            store.add_run(Run(tag="x", shard=plan.to_dict()))
        paths.append(str(path))
    (found,) = of_files(paths, [])
    assert found.describe().startswith("tune's search in shards of plan ") and "missing shard(s) 2/3" in found.describe()
    assert "planned cases" not in found.describe()
    with Store.open(str(tmp_path / "t2.db")) as store:
        store.add_run(Run(tag="x", shard=ShardPlan.of_search(Shard(2, 3), "compilebench tune --model vit",
                                                             "0.3.0").to_dict()))
    (found,) = of_files([*paths, str(tmp_path / "t2.db")], [])
    assert found.complete and "each its share of the configurations searched: complete" in found.describe()


def test_push_adds_only_the_run_files_the_dataset_lacks_and_the_card_where_it_has_none(tmp_path, main_here,
                                                                                        monkeypatch):
    """huggingface_hub's HfApi as the push uses it, faked (no network here): a dataset repo made if missing, the
    files it holds listed, this folder's new run files and marker uploaded, the card only where none is, the report
    under a folder of its own; no token passed (huggingface_hub's own login)."""
    import huggingface_hub

    calls = []
    there = {"README.md", "data/someone-elses-run.jsonl"}

    class Api:
        def __init__(self, *a, **kw):
            assert not a and not kw, "no token handed over: huggingface_hub's own login"

        def create_repo(self, repo_id, *, repo_type, exist_ok):
            calls.append(("create", repo_id, repo_type, exist_ok))

        def list_repo_files(self, repo_id, *, repo_type):
            assert repo_type == "dataset"
            return sorted(there)

        def upload_folder(self, *, repo_id, repo_type, folder_path, commit_message, allow_patterns=None,
                          path_in_repo=None):
            assert repo_type == "dataset" and os.path.isdir(folder_path)
            calls.append(("upload", path_in_repo, tuple(allow_patterns or ())))
            there.update(allow_patterns or ())

    from huggingface_hub import constants

    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the tests run offline; the fake is the network here
    db = _results_file(tmp_path)
    code, _, err = main_here("publish", db, "--out", "pub", "--push", "me/results")
    assert code == 0, err
    (mine,) = [f"data/{p.name}" for p in (tmp_path / "pub" / "data").glob("*.jsonl")]
    assert calls[0] == ("create", "me/results", "dataset", True)
    assert calls[1] == ("upload", None, (mine, "compilebench.json"))  # the card is theirs: left as it is
    assert calls[2][0] == "upload" and calls[2][1].startswith("report/") and calls[2][2] == ()
    assert "pushed 1 run file(s) to https://huggingface.co/datasets/me/results" in err
    calls.clear()
    code, _, err = main_here("publish", db, "--out", "pub", "--push", "me/results")  # again: nothing new
    assert code == 0 and calls[1] == ("upload", None, ("compilebench.json",))
    assert "pushed 0 run file(s)" in err and "(1 already there, left as they are)" in err


def test_shards_that_dealt_the_cases_otherwise_are_two_plans():
    """Two machines whose estimates differed (another --shard-history, a model one could not build) would deal the
    cases otherwise: the partition is part of the plan's id, so their files are refused together."""
    groups = {"a": {"a1": 10.0}, "b": {"b1": 5.0}, "c": {"c1": 1.0}}
    one = ShardPlan.made(Shard(1, 2), groups, "compilebench run", "0.3.0")
    other = ShardPlan.made(Shard(2, 2), {**groups, "c": {"c1": 20.0}}, "compilebench run", "0.3.0")
    same = ShardPlan.made(Shard(2, 2), groups, "compilebench run", "0.3.0")
    assert one.plan == same.plan != other.plan and one.cases != other.cases
