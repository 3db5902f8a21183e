"""--compile-cache mega: repeat 1 compiles cold and saves torch's portable cache artifacts; every later repeat is
a fresh process with empty compiler folders that loads them before its first call, as a new replica would."""

import os

import pytest
from tiny_factories import make_inputs, make_stacked

import compilebench
from compilebench.core import settings
from compilebench.core.case import Case
from compilebench.core.repeat import Repeat
from compilebench.core.result import Result
from compilebench.core.variant import Variant
from compilebench.measure import compiler_state


def test_without_artifacts_a_repeat_compiles_cold_in_an_empty_folder_and_is_told_where_to_save(tmp_path):
    states = compiler_state.StateFolders(str(tmp_path))
    env, cache, artifacts = compiler_state.for_job("mega", states, "case")
    assert cache == "cold" and artifacts.startswith(states.root) and not os.path.exists(artifacts)
    assert compiler_state.is_empty(os.path.dirname(env["TORCHINDUCTOR_CACHE_DIR"]))
    with open(artifacts, "wb") as f:
        f.write(b"saved by repeat 1")
    env2, cache2, artifacts2 = compiler_state.for_job("mega", states, "case")
    assert cache2 == "mega" and artifacts2 == artifacts  # the next repeat loads them...
    assert env2["TORCHINDUCTOR_CACHE_DIR"] != env["TORCHINDUCTOR_CACHE_DIR"]  # ...into folders of its own, empty
    assert compiler_state.is_empty(os.path.dirname(env2["TORCHINDUCTOR_CACHE_DIR"]))
    states.close()


def test_mega_dir_keeps_the_artifacts_in_the_users_folder_made_if_needed(tmp_path):
    states = compiler_state.StateFolders(str(tmp_path))
    kept = tmp_path / "artifacts"
    _, cache, artifacts = compiler_state.for_job(f"mega:{kept}", states, "case")
    assert cache == "cold" and os.path.dirname(artifacts) == str(kept) and kept.is_dir()
    states.close()
    assert kept.is_dir()  # the run's folders go; the user's stays


def test_the_summary_gives_the_start_a_replica_sees_from_the_repeats_that_loaded():
    case = Case("m", 1, Variant("default"), compile_cache="mega")
    cold = Repeat(index=1, compile_cache="cold", first_call_s=20.0, compile_s=19.0, samples_ms=[1.0],
                  mega_cache={"saved_bytes": 1000, "save_s": 0.1})
    loads = [Repeat(index=i, compile_cache="mega", first_call_s=f, compile_s=f - 1, samples_ms=[1.0],
                    mega_cache={"loaded_bytes": 1000, "load_s": 0.5, "missed": 0}) for i, f in ((2, 3.0), (3, 5.0))]
    r = Result(case, [cold, *loads])
    assert r.cold_compile_s == 19.0 and r.warm_compile_s is None  # a loaded compile is not a warm local cache
    assert r.mega_cache.to_dict() == {"bytes": 1000, "repeats": 2, "load_s": 0.5, "compile_s": 3.0, "first_call_s": 4.0,
                            "start_s": 4.5, "missed": 0}


def test_a_backend_that_leaves_no_artifacts_says_so_and_the_next_repeat_compiles_cold(tmp_path):
    results = compilebench.benchmark(make_stacked(), inputs=make_inputs, compile_cache="mega", backend="eager",
                                     repeats=2, iters=3, warmup=0, db=str(tmp_path / "r.db"))
    (r,) = [r for r in results.view.results if r.case.variant.compiled]
    assert r.status == "ok" and [rep.compile_cache for rep in r.repeats] == ["cold", "cold"]
    assert "no portable artifacts" in r.mega_cache.problem
    assert "mega-cache" in r.case.variant.label or "mega-cache" in " ".join(r.case.words())


@pytest.mark.parametrize("value, message", [
    ("mega:", "needs a folder after the colon"),
    ("mega:/no/such/parent/here", "is not a folder and its parent does not exist"),
    ("hot", "must be cold, warm, mega, mega:DIR or an existing directory"),
])
def test_a_bad_compile_cache_is_one_line_and_exit_2(main_here, value, message):
    code, _, err = main_here("run", "--model", "resnet-50", "--compile-cache", value)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_mega_is_refused_with_ray(main_here):
    code, _, err = main_here("run", "--model", "resnet-50", "--compile-cache", "mega", "--executor", "ray")
    assert code == 2 and "--compile-cache mega keeps its files on this host" in err


def test_the_words_name_the_kept_folder():
    assert settings.Settings(compile_cache="mega").words() == ("mega-cache",)
    assert settings.Settings(compile_cache="mega:/srv/cache/resnet").words() == ("mega-cache resnet",)


@pytest.mark.slow
def test_repeat_two_loads_what_repeat_one_saved_and_a_later_run_reuses_the_kept_artifacts(tmp_path):
    """Worker processes and a real inductor compile: repeat 2's first call compiles no graph inductor's cache did
    not hold (read from dynamo's compile counters), and a later run on the kept folder starts from them at once."""
    kept = tmp_path / "kept"
    common = dict(inputs="tiny_factories:make_inputs", variants=("default",), iters=3, warmup=0,
                  compile_cache=f"mega:{kept}")
    first = compilebench.benchmark("tiny_factories:make_stacked", repeats=2, db=str(tmp_path / "a.db"), **common)
    (r,) = first.view.results
    cold, loaded = r.repeats
    assert r.status == "ok" and (cold.compile_cache, loaded.compile_cache) == ("cold", "mega")
    assert cold.mega_cache.saved_bytes > 0 and cold.mega_cache.artifacts["inductor"] >= 1
    assert loaded.mega_cache.loaded_bytes == cold.mega_cache.saved_bytes
    assert loaded.graphs >= 1 and loaded.compile_cache_hits == loaded.graphs and loaded.mega_cache.missed == 0
    assert r.mega_cache.start_s == pytest.approx(loaded.mega_cache.load_s + loaded.first_call_s)
    assert [f for f in os.listdir(kept) if f.endswith(".megacache")]
    again = compilebench.benchmark("tiny_factories:make_stacked", repeats=1, db=str(tmp_path / "b.db"), **common)
    (r2,) = again.view.results
    assert r2.repeats[0].compile_cache == "mega" and r2.mega_cache.missed == 0
