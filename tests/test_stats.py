"""Known-answer statistics tests, each citing where its answer comes from."""

import math

import pytest

from compilebench import stats


def test_t_critical_values_match_the_published_table():
    # Student's t table, two-sided 95% (e.g. NIST/SEMATECH e-Handbook, section 1.3.6.7.2)
    assert stats.t_critical(1) == pytest.approx(12.706, abs=1e-3)
    assert stats.t_critical(9) == pytest.approx(2.262, abs=1e-3)
    assert stats.t_critical(29) == pytest.approx(2.045, abs=1e-3)
    assert stats.t_critical(299) == pytest.approx(1.968, abs=1e-3)


def test_summary_of_a_textbook_sample():
    # 2, 4, 4, 4, 5, 5, 7, 9: mean 5, population sd 2 (Wikipedia "Standard deviation", worked example);
    # sample sd = sqrt(32/7)
    s = stats.summarize([2, 4, 4, 4, 5, 5, 7, 9])
    assert s["n"] == 8
    assert s["mean"] == 5
    assert s["median"] == 4.5
    assert s["std"] == pytest.approx(math.sqrt(32 / 7))
    assert s["min"] == 2 and s["max"] == 9
    assert s["cv"] == pytest.approx(math.sqrt(32 / 7) / 5)
    half = 2.365 * math.sqrt(32 / 7) / math.sqrt(8)  # t(0.975, 7) = 2.365
    assert s["ci95_low"] == pytest.approx(5 - half, abs=2e-3)
    assert s["ci95_high"] == pytest.approx(5 + half, abs=2e-3)


def test_percentiles_are_hyndman_fan_type_7():
    # Type 7 (R's default, numpy's linear): p-th of 1..10 is 1 + p*(n-1)
    s = stats.summarize(list(range(1, 11)))
    assert s["p90"] == pytest.approx(9.1)
    assert s["p99"] == pytest.approx(9.91)


def test_one_sample_has_no_spread_and_no_interval_width():
    s = stats.summarize([3.0])
    assert s["n"] == 1 and s["std"] == 0.0 and s["ci95_low"] == s["ci95_high"] == 3.0


def test_no_samples_gives_empty_statistics():
    s = stats.summarize([])
    assert s["n"] == 0 and s["mean"] is None


def test_improvement_is_the_guides_formula():
    # Guide, A100 batch 1, ResNet: 6.531 -> 4.124 ms
    assert stats.improvement_pct(6.531, 4.124) == pytest.approx((6.531 - 4.124) / 6.531 * 100)
    assert stats.improvement_pct(10, 12) == pytest.approx(-20.0)


def test_ratio_ci_known_answer():
    # Relative variance of each mean (0.1)^2 / 100 = 1e-4; Welch df = (2e-4)^2 / (2 * 1e-8 / 99) = 198;
    # t(0.975, 198) = 1.97202; half-width on the log scale 1.97202 * sqrt(2e-4) = 0.027889.
    a = {"mean": 10.0, "std": 1.0, "n": 100}
    b = {"mean": 5.0, "std": 0.5, "n": 100}
    ratio, low, high = stats.ratio_ci(a, b)
    assert ratio == 0.5
    assert (low, high) == (pytest.approx(0.48625, abs=2e-5), pytest.approx(0.51414, abs=2e-5))
    assert stats.verdict(low, high) == "faster"
    assert stats.verdict(*stats.ratio_ci(b, a)[1:]) == "slower"
    noisy = {"mean": 5.2, "std": 5.0, "n": 10}
    assert stats.verdict(*stats.ratio_ci(b, noisy)[1:]) == "no significant difference"
    assert stats.ratio_ci(a, {"mean": 5.0, "std": 0.0, "n": 1}) == (0.5, None, None)
    assert stats.verdict(None, None) == "no interval (n < 2)"


def test_break_even_is_compile_seconds_over_the_per_call_saving():
    assert stats.break_even(30.0, 10.0, 4.0) == 5000  # 30 s / 6 ms
    assert stats.break_even(1.0, 3.0, 2.999) == 1_000_000
    assert stats.break_even(0.5, 10.0, 7.0) == 167  # 166.7 rounded up: the 167th call has paid
    assert stats.break_even(30.0, 4.0, 4.0) is None and stats.break_even(30.0, 4.0, 5.0) is None  # never
    assert stats.break_even(None, 10.0, 4.0) is None


def test_speedup_ci_and_verdict():
    eager = {"mean": 10.0, "std": 1.0, "n": 100}
    compiled = {"mean": 5.0, "std": 0.5, "n": 100}
    s, low, high = stats.speedup_ci(eager, compiled)
    assert s == 2.0 and (low, high) == (pytest.approx(1.0 / 0.51414, abs=1e-4), pytest.approx(1.0 / 0.48625, abs=1e-4))
    assert stats.speedup_verdict(low, high) == "faster"
    assert stats.speedup_verdict(*stats.speedup_ci(compiled, eager)[1:]) == "slower"
    assert stats.speedup_verdict(0.9, 1.1) == "no significant difference"
