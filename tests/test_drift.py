"""Issue 23, 2: a speed-up between results of different runs is called faster or slower only beyond the machine's
run-to-run drift as well as its interval; the drift comes from the results' own history, or a stated default."""

import fakeresults as fr
import pytest

from compilebench.core import drift, speedups
from compilebench.core.vocab import Verdict

TIGHT = [1 / 1.001, 1.0, 1.001]


def tight(model, mean, run, mode="eager", **kw):
    return fr.result(model, 1, mode, mean, processes=[mean * x for x in TIGHT], run=run, **kw)


def test_results_say_whether_they_come_from_one_run():
    a, b, c = tight("vit", 9.0, "r1"), tight("vit", 9.0, "r1", mode="default"), tight("vit", 9.0, "r2")
    assert not drift.across_runs(a, b, unknown=True) and drift.across_runs(a, c, unknown=False)
    old, older = tight("vit", 9.0, None), tight("vit", 9.0, None)
    assert drift.across_runs(old, older, unknown=True) and not drift.across_runs(old, older, unknown=False)
    assert not drift.across_runs(old, old, unknown=True)  # one result is one run, whatever it records


def test_without_history_the_default_drift_is_used_and_said():
    d = drift.estimate([tight("vit", 9.0, "r1"), tight("vit", 9.5, "r2")])
    assert d.value == drift.DEFAULT and "the default" in d.source and "1 pair(s)" in d.source


def test_drift_is_the_largest_move_between_runs_of_one_case_on_one_machine():
    history = [tight("vit", m, f"r{i}") for i, m in enumerate([9.0, 9.27, 9.09, 9.18])]  # moves 3%, 1.9%, 1%
    history += [tight("vit", 30.0, "r9", env=fr.T4)]  # another machine: no pair with the others
    d = drift.estimate(history)
    assert abs(d.value - 0.03) < 1e-9 and "3 moves" in d.source


def test_an_aa_pair_across_runs_is_never_called_slower_but_a_real_change_beyond_drift_is():
    a, b = tight("vit", 10.0, "r1"), tight("vit", 11.4, "r2")  # 14% apart, as the A/A pair was
    assert speedups.speedup(a, b).verdict == Verdict.slower  # as if one run: the interval alone
    across = speedups.speedup(a, b, drift=drift.Drift(drift.DEFAULT, "the default"))
    assert across.verdict == Verdict.inconclusive and across.drift == drift.DEFAULT  # not `same` either
    assert across.low < 1 / 1.14 / 1.2 and across.high > 1 / 1.14 * 1.2  # the interval holds the drift
    measured = drift.Drift(0.03, "history")  # a machine whose history shows 3%: 14% is beyond it
    assert speedups.speedup(a, b, drift=measured).verdict == Verdict.slower


def test_a_report_says_which_speedups_compare_different_runs_and_the_drift_it_assumed(tmp_path):
    from compilebench import report
    from compilebench.report import tables
    from compilebench.report.view import View

    one_run = [tight("vit", 9.0, "r1"), tight("vit", 4.5, "r1", mode="default", compile_s=3.0)]
    later = [tight("resnet-50", 9.0, "r1"), tight("resnet-50", 4.5, "r2", mode="default", compile_s=3.0)]
    view = View(one_run + later)
    rows = {r["Task/Model"]: r for r in tables.speedup_table(view).records()}
    assert rows["Image Classification/ViT"]["verdict"] == "faster"
    assert rows["Image Classification/ResNet"]["verdict"] == "faster (across runs)"  # 2x clears the 25% drift
    report.write(view, str(tmp_path / "out"), ("md", "csv"), ["r.db"])
    text = (tmp_path / "out" / "report.md").read_text()
    assert "across runs: the two sides of such a verdict were measured in different runs" in text
    assert "±25% (the default" in text
    alone = View(one_run)
    report.write(alone, str(tmp_path / "alone"), ("md",), ["r.db"])
    assert "across runs" not in (tmp_path / "alone" / "report.md").read_text()


@pytest.mark.slow  # two real runs: 20 s
@pytest.mark.alone  # another test's processes would slow one run and not the other
def test_two_runs_of_one_case_into_two_files_are_never_called_faster_or_slower(tmp_path, main_here):
    args = ["--model", "resnet-50", "--tiny", "--variant", "eager", "--iters", "20", "--warmup", "2", "--repeats", "3",
            "--device", "cpu", "--format", "csv", "--quiet", "--isolation", "inline"]
    for name in ("a", "b"):
        code, _, err = main_here("run", *args, "--db", f"{name}.db", "--out", name)
        assert code == 0, err
    code, out, err = main_here("compare", "a.db", "b.db")
    assert code == 0, err
    (row,) = [line for line in out.splitlines() if line.startswith("| Image Classification/ResNet")]
    assert row.split("|")[8].strip() in ("inconclusive (across runs)",), row  # B vs A
    assert "measured in different runs" in out and "compilebench run --env A=PYTHON --env B=PYTHON" in out
