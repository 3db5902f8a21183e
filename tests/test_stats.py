"""Known-answer statistics tests, each citing where its answer comes from."""

import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compilebench.core import stats
from compilebench.core.vocab import Verdict

# Cushny & Peebles' sleep data (Student, 1908), R's `sleep` dataset: extra hours of sleep under two drugs for the
# same ten patients. R 4.x prints, for t.test(extra ~ group, data = sleep, paired = TRUE): t = -4.0621, df = 9,
# 95% CI -2.4598858 -0.7001142, mean difference -1.58; and unpaired (Welch, R's default): t = -1.8608,
# df = 17.776, 95% CI -3.3654832 0.2054832.
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


def test_t_critical_values_match_the_published_table():
    # Student's t table, two-sided 95% (e.g. NIST/SEMATECH e-Handbook, section 1.3.6.7.2)
    assert stats.t_critical(1) == pytest.approx(12.706, abs=1e-3)
    assert stats.t_critical(2) == pytest.approx(4.303, abs=1e-3)
    assert stats.t_critical(9) == pytest.approx(2.262, abs=1e-3)
    assert stats.t_critical(29) == pytest.approx(2.045, abs=1e-3)


def test_summary_of_a_textbook_sample():
    # 2, 4, 4, 4, 5, 5, 7, 9: mean 5, population sd 2 (Wikipedia "Standard deviation", worked example);
    # sample sd = sqrt(32/7)
    s = stats.summarize([2, 4, 4, 4, 5, 5, 7, 9])
    assert s.n == 8 and s.mean == 5 and s.median == 4.5
    assert s.std == pytest.approx(math.sqrt(32 / 7))
    assert s.min == 2 and s.max == 9
    assert s.cv == pytest.approx(math.sqrt(32 / 7) / 5)


def test_percentiles_are_hyndman_fan_type_7():
    # Type 7 (R's default, numpy's linear): p-th of 1..10 is 1 + p*(n-1)
    s = stats.summarize(list(range(1, 11)))
    assert s.p90 == pytest.approx(9.1)
    assert s.p99 == pytest.approx(9.91)


def test_no_samples_gives_empty_statistics():
    s = stats.summarize([])
    assert s.n == 0 and s.mean is None


def test_paired_difference_matches_rs_t_test_on_the_sleep_data():
    diff, se, df = stats.paired(SLEEP_1, SLEEP_2)  # SLEEP_2 - SLEEP_1
    assert diff == pytest.approx(1.58) and df == 9 and diff / se == pytest.approx(4.0621, abs=1e-4)
    half = stats.t_critical(df) * se
    assert (diff - half, diff + half) == (pytest.approx(0.7001142, abs=1e-6), pytest.approx(2.4598858, abs=1e-6))


def test_welch_difference_matches_rs_t_test_on_the_sleep_data():
    diff, se, df = stats.welch(SLEEP_1, SLEEP_2)
    assert df == pytest.approx(17.776, abs=1e-3) and diff / se == pytest.approx(1.8608, abs=1e-4)
    half = stats.t_critical(df) * se
    assert (diff - half, diff + half) == (pytest.approx(-0.2054832, abs=1e-6), pytest.approx(3.3654832, abs=1e-6))


def test_estimate_is_the_geometric_mean_with_a_log_space_interval_that_never_goes_below_zero():
    # 10, 20, 40: logs ln10 + (0, ln2, 2 ln2); mean log ln20, sd of logs ln2 (a spacing of ln2), so the interval is
    # exp(ln20 +- t(2) * ln2 / sqrt 3) with t(2) = 4.303 (the table above): 20 * 2**(+-2.4843).
    mean, low, high = stats.estimate([10.0, 20.0, 40.0])
    assert mean == pytest.approx(20.0)
    assert low == pytest.approx(20 * 2 ** (-4.302653 / math.sqrt(3)), rel=1e-5)
    assert high == pytest.approx(20 * 2 ** (4.302653 / math.sqrt(3)), rel=1e-5)
    # wildly spread processes: the interval is wide, and still positive (an arithmetic t-interval would not be)
    _, low, _ = stats.estimate([1.0, 100.0])
    assert 0 < low < 1
    assert stats.estimate([5.0]) == (pytest.approx(5.0), None, None)  # one process: no interval


def test_speedup_is_the_ratio_of_geometric_means_with_welch_in_log_space():
    eager, compiled = [10.0, 12.0, 11.0], [5.0, 6.0, 5.5]
    s, low, high = stats.speedup(eager, compiled)
    assert s == pytest.approx(2.0)  # each eager process takes twice as long as the matching compiled one
    diff, se, df = stats.welch([math.log(x) for x in compiled], [math.log(x) for x in eager])
    half = stats.t_critical(df) * se
    assert (low, high) == (pytest.approx(math.exp(diff - half)), pytest.approx(math.exp(diff + half)))
    # one eager process: a ratio, but no interval
    assert stats.speedup([10.0], compiled) == (pytest.approx(10.0 / (5.0 * 6.0 * 5.5) ** (1 / 3)), None, None)


def test_paired_speedup_cancels_drift_the_two_sides_shared():
    # Each process ran both variants; the machine drifted 30% between processes, the ratio stayed 2.0 +- 1%.
    eager = [10.0, 13.0, 11.5, 9.0]
    compiled = [5.0, 6.5 * 1.01, 5.75 / 1.01, 4.5]
    paired = stats.speedup(eager, compiled, pair=True)
    unpaired = stats.speedup(eager, compiled)
    assert paired[0] == pytest.approx(unpaired[0])
    assert (paired[2] - paired[1]) < (unpaired[2] - unpaired[1]) / 5  # far tighter
    assert paired[1] < 2.0 < paired[2]


@pytest.mark.parametrize("low, high, verdict", [
    (1.03, 1.2, "faster"),  # whole interval above 1.02
    (0.5, 0.97, "slower"),  # whole interval below 1 / 1.02
    (0.99, 1.01, "same"),  # inside the band either way
    (0.995, 1.03, "inconclusive"),  # reaches across the band's edge
    (0.9, 1.2, "inconclusive"),
    (None, None, "inconclusive"),  # no interval (one process)
])
def test_verdicts_need_the_whole_interval_beyond_or_inside_the_minimum_effect(low, high, verdict):
    assert Verdict.of(low, high, 0.02) == verdict


def test_a_tiny_but_certain_difference_is_the_same_not_faster():
    # Issue 13: 10.00 ms vs 9.95 ms at CV 2%: a precise interval around 1.005 is no reason to act.
    eager = [10.0 * (1 + 0.002 * k) for k in (-1, 0, 1, 0, 1)]
    compiled = [9.95 * (1 + 0.002 * k) for k in (0, 1, -1, 0, 1)]
    s, low, high = stats.speedup(eager, compiled)
    assert 1.0 < low and high < 1.02
    assert Verdict.of(low, high, 0.02) == "same"


def test_case_summary_separates_between_and_within_process_figures():
    per_process = [[10.0, 10.2, 9.8], [20.0, 20.4, 19.6], [40.0, 40.8, 39.2]]
    s = stats.case_summary(per_process)
    assert s.repeats == 3 and s.n == 9 and s.n_min == 3
    assert s.mean == pytest.approx(20.0)  # geometric mean of 10, 20, 40
    assert s.between_cv == pytest.approx(math.log(2))
    assert s.within_cv == pytest.approx(0.02)  # each process: sd 0.02 x its mean
    assert s.min == 9.8 and s.max == 40.8


def test_improvement_is_the_guides_formula_and_follows_the_speedup():
    # Guide, A100 batch 1, ResNet: 6.531 -> 4.124 ms
    assert stats.improvement_pct(6.531, 4.124) == pytest.approx((6.531 - 4.124) / 6.531 * 100)
    assert stats.speedup_to_improvement(6.531 / 4.124) == pytest.approx(stats.improvement_pct(6.531, 4.124))
    assert stats.speedup_to_improvement(0.8) == pytest.approx(-25.0)


def test_break_even_is_compile_seconds_over_the_per_call_saving():
    assert stats.break_even(30.0, 10.0, 4.0) == 5000  # 30 s / 6 ms
    assert stats.break_even(1.0, 3.0, 2.999) == 1_000_000
    assert stats.break_even(0.5, 10.0, 7.0) == 167  # 166.7 rounded up: the 167th call has paid
    assert stats.break_even(30.0, 4.0, 4.0) is None and stats.break_even(30.0, 4.0, 5.0) is None  # never
    assert stats.break_even(None, 10.0, 4.0) is None


def test_reading_a_results_file_never_imports_scipy_stats(tmp_path):
    """scipy.stats took 2.1 s to import on this project's VM, scipy.special (whose t and normal distributions it calls)
    0.6 s: every `report`, `check` and `run` reads intervals and a sequential design's looks, so none imports it."""
    db = shutil.copy(Path(__file__).parents[1] / "benchmarks" / "data" / "h200-quick-rounds-1130.db", tmp_path)
    code = ("import sys\nfrom compilebench.cli import main\n"
            "assert main(['report', sys.argv[1], '--format', 'csv', '--out', sys.argv[2]]) == 0\n"
            "print(sorted(m for m in sys.modules if m.startswith('scipy.stats')))")
    done = subprocess.run([sys.executable, "-c", code, str(db), str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]" and (tmp_path / "out").exists()
