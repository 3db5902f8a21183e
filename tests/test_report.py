"""Reports from results files alone: the guide's tables, comparisons, charts, HTML, CSV/JSON and compare."""

import csv
import json
import math
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import fakeresults as fr
import pytest
from PIL import Image

from compilebench import report
from compilebench.core import drift, speedups, stats, suites
from compilebench.core.generation import GenerateCalls
from compilebench.diagnostics import peaks
from compilebench.report import charts, details, drawing, html, suite, tables, terminal
from compilebench.report.view import View

GUIDE = Path(__file__).parent / "data" / "guide_a100_batch1.md"
EVIL = "<script>document.title='pwned'</script>"


def md_table(text: str, title: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the markdown table under `### title`."""
    lines = text[text.index(f"### {title}\n"):].splitlines()[2:]
    table = []
    for line in lines:
        if not line.startswith("|"):
            break
        table.append([c.strip() for c in line.strip().strip("|").split("|")])
    return table[0], table[2:]


def md_records(text: str, title: str) -> list[dict[str, str]]:
    """The rows of the markdown table under `### title`, each as {column name: cell}."""
    header, rows = md_table(text, title)
    return [dict(zip(header, r)) for r in rows]


def guide_results() -> list[dict]:
    _, rows = fr.guide_table(GUIDE)
    model = fr.label_to_model()
    out = []
    for label, eager, compiled in rows:
        out.append(fr.result(model[label], 1, "eager", float(eager)))
        out.append(fr.result(model[label], 1, "default", float(compiled), compile_s=50.0))
    return out


def test_the_guides_a100_batch_1_table_renders_as_in_the_guide(tmp_path, here):
    title, rows = fr.guide_table(GUIDE)
    fr.fill(tmp_path / "a100.db", guide_results())
    p = here("report", "a100.db", "--out", "out", "--format", "md")
    assert p.returncode == 0, p.stderr
    text = (tmp_path / "out" / "report.md").read_text()
    header, got = md_table(text, title)  # "### A100 (batch size: 1)"
    assert header[:3] == ["Task/Model", "torch 2.0 - no compile", "torch 2.0 - compile"]
    assert [tuple(r[:3]) for r in got] == rows  # same rows, same order, same values
    assert header[3:] == ["% improvement", "95% CI", "verdict", "compile s"]
    for (label, eager, compiled), r in zip(rows, md_records(text, title)):
        assert r["% improvement"] == f"{(float(eager) - float(compiled)) / float(eager) * 100:.1f}%"
        assert r["compile s"] == "50.0 [40.0-62.5]"  # one cold compile, and as far as one moves from another (25%)
        low, high = (float(x.rstrip("%")) for x in r["95% CI"].split(" to "))
        assert low < float(r["% improvement"].rstrip("%")) < high  # the interval holds the estimate
        assert r["verdict"] in ("faster", "slower", "same", "inconclusive")
    assert title in p.stdout.splitlines() and max(map(len, p.stdout.splitlines())) <= 100  # the summary
    details = here("report", "a100.db", "--out", "out", "--format", "md", "--details")
    assert f"### {title}" in details.stdout  # the guide's table itself, printed with --details


def test_merging_machines_and_torch_versions_gives_the_comparison_tables(tmp_path, here):
    a100_21 = {**fr.A100, "torch": "2.1.0.dev20230601+cu118"}
    fr.fill(tmp_path / "one.db", [
        fr.result("beit", 1, "eager", 12.0), fr.result("beit", 1, "default", 8.0),
        fr.result("beit", 4, "eager", 14.0), fr.result("beit", 4, "default", 13.0),
        fr.result("resnet-50", 1, "eager", 7.0, env=fr.T4), fr.result("resnet-50", 1, "default", 4.0, env=fr.T4),
        fr.result("resnet-50", 1, "reduce-overhead", 3.5, env=fr.T4),
    ])
    fr.fill(tmp_path / "two.db", [
        fr.result("beit", 1, "eager", 10.0, env=a100_21), fr.result("beit", 1, "default", 6.0, env=a100_21),
        fr.result("beit", 4, "eager", 14.0, env=a100_21), fr.result("beit", 4, "default", 12.0, env=a100_21),
    ])
    shutil.copy(tmp_path / "one.db", tmp_path / "copy.db")  # the same results again: counted once
    p = here("report", "one.db", "two.db", "copy.db", "--out", "out", "--format", "md,csv")
    assert p.returncode == 0, p.stderr
    text = (tmp_path / "out" / "report.md").read_text()
    assert "11 results (11 measured ok) from 3 machine(s)" in text

    header, rows = md_table(text, "A100: torch versions")
    assert header == ["Task/Model", "Batch Size", "torch 2.0 - no compile", "torch 2.0 - compile", "torch 2.1 - no compile",
                      "torch 2.1 - compile", "% faster torch 2.1 vs 2.0, no compile", "95% CI torch 2.1 vs 2.0, no compile",
                      "% faster torch 2.1 vs 2.0, compile", "95% CI torch 2.1 vs 2.0, compile"]
    assert [[row[i] for i in (0, 1, 2, 3, 4, 5, 6, 8)] for row in rows] == [
        ["Image Classification/BeiT", "1", "12.000", "8.000", "10.000", "6.000", "16.7% (faster)", "25.0% (faster)"],
        ["Image Classification/BeiT", "4", "14.000", "13.000", "14.000", "12.000", "0.0% (same)",
         "7.7% (faster)"],
    ]
    for row in rows:  # each improvement's interval holds it
        for value, ci in ((row[6], row[7]), (row[8], row[9])):
            low, high = (float(x.rstrip("%")) for x in ci.split(" to "))
            assert low <= float(value.split("%")[0]) <= high, (value, ci)
    header, rows = md_table(text, "T4: compile modes, torch 2.0")
    assert header == ["Task/Model", "Batch Size", "torch 2.0 - no compile", "torch 2.0 - compile",
                      "torch 2.0 - compile (reduce-overhead)", "% improvement (default)",
                      "% improvement (reduce-overhead)"]
    assert rows == [["Image Classification/ResNet", "1", "7.000", "4.000", "3.500", "42.9% (faster)", "50.0% (faster)"]]
    # one guide table per hardware and batch size; both torch versions side by side on the A100
    header, _ = md_table(text, "A100 (batch size: 4)")
    assert header[1:5] == ["torch 2.0 - no compile", "torch 2.0 - compile", "torch 2.1 - no compile", "torch 2.1 - compile"]
    assert "### T4 (batch size: 1)" in text and "T4: torch versions" not in text
    assert len((tmp_path / "out" / "results.csv").read_text().splitlines()) == 1 + 11


def test_an_empty_store_is_one_clear_line(tmp_path, here):
    fr.fill(tmp_path / "empty.db", [])
    p = here("report", "empty.db", "--out", "out")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no results in empty.db: nothing to report" in p.stderr
    assert not (tmp_path / "out").exists()


def test_a_store_of_failures_reports_them_without_charts(tmp_path, here):
    fr.fill(tmp_path / "f.db", [
        fr.result("detr", 16, "eager", None, status="oom", message="CUDA out of memory. Tried to allocate 2 GiB"),
        fr.result("detr", 16, "default", None, status="error", message="RuntimeError: boom"),
    ])
    p = here("report", "f.db", "--out", "out")
    assert p.returncode == 0, p.stderr
    text = (tmp_path / "out" / "report.md").read_text()
    assert "No case was measured ok" in text
    _, rows = md_table(text, "A100 (batch size: 16)")
    assert rows == [["Object Detection/DETR", "OOM", "error", "", "", "", ""]]
    assert "- detr b16 no compile: oom: CUDA out of memory. Tried to allocate 2 GiB" in text
    assert not list((tmp_path / "out").glob("charts/*"))
    assert (tmp_path / "out" / "report.html").exists()
    # the terminal says why too: it showed 'OOM' and 'error' with no reason but in the report's details
    assert "oom: Object Detection/DETR: b16 eager: CUDA out of memory. Tried to allocate 2 GiB" in p.stdout
    assert "error: Object Detection/DETR: b16 default: RuntimeError: boom\n" in p.stdout


def test_the_terminal_says_a_failures_first_line_and_that_more_follows():
    from compilebench.report import terminal

    failed = fr.result("vit", 1, "default", None, status="error",
                       message="RuntimeError: self.size(0) needs to be greater than 16, but got 1\n  at int_mm")
    ok = fr.result("vit", 1, "eager", 1.0)
    assert terminal.failures(View([ok, failed])) == [
        "error: Image Classification/ViT: b1 default: RuntimeError: self.size(0) needs to be greater than "
        "16, but got 1 ..."]


def test_bad_report_options_are_one_line_and_write_nothing(tmp_path, here):
    fr.fill(tmp_path / "r.db", guide_results()[:2])
    (tmp_path / "afile").write_text("x")
    (tmp_path / "empty.db").write_bytes(b"")
    for args, message in [
        (["report", "r.db", "--format", "md,pdf"], "unknown report format 'pdf' (allowed: md, html, csv, json)"),
        (["report", "r.db", "--out", "afile"], "--out 'afile' is a file"),
        (["report", "missing.db"], "results file 'missing.db' does not exist"),
        (["report", "empty.db"], "results file 'empty.db' is empty"),  # issue 27.5
        # issue 27.8: the same check as run and tune
        (["report", "r.db", "--min-effect", "200"], "--min-effect must be from 0% to below 100%"),
        (["report", "r.db", "--min-effect", "-5"], "--min-effect must be from 0% to below 100%"),
        (["compare", "r.db", "r.db", "--min-effect", "-5"], "--min-effect must be from 0% to below 100%"),
        # a mix for results that served no shapes would weigh nothing, silently
        (["report", "r.db", "--mix", "1:50,4:50"], "--mix '1:50,4:50': these results hold no shapes served"),
    ]:
        p = here(*args)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and message in p.stderr, p.stderr
    assert sorted(os.listdir(tmp_path)) == ["afile", "empty.db", "r.db"]  # no report, no -wal or -shm beside a file read


def test_an_interrupted_report_leaves_the_previous_one_whole(tmp_path, monkeypatch):
    results = guide_results()
    report.write(View(results), str(tmp_path), ("md",), ["r.db"])
    before = (tmp_path / "report.md").read_text()

    def fail(*a):
        raise KeyboardInterrupt

    monkeypatch.setattr(report.flat, "to_csv", fail)  # rendering dies after the markdown was made
    with pytest.raises(KeyboardInterrupt):
        report.write(View(results + [fr.result("vit", 4, "eager", 1.0)]), str(tmp_path), ("md", "csv"), ["r.db"])
    assert (tmp_path / "report.md").read_text() == before
    assert sorted(os.listdir(tmp_path)) == ["charts", "report.md"]  # no scratch folder, no half-written file


def test_csv_and_json_are_flat_rows_that_pandas_loads(tmp_path):
    import pandas as pd  # in the [test] extra
    results = guide_results() + [fr.result("detr", 4, "eager", None, status="oom", message="out of memory")]
    for r in results[:2]:
        r.flops = int(4e12)  # as if counted: 4 TFLOP per forward
    report.write(View(results), str(tmp_path), ("csv", "json"), ["r.db"])
    for frame in (pd.read_csv(tmp_path / "results.csv"), pd.read_json(tmp_path / "results.json")):
        assert len(frame) == 25
        vit = frame[(frame.model == "vit") & (frame.variant == "default")].iloc[0]
        assert vit.mean_ms == pytest.approx(7.584) and vit.hardware == "A100" and vit.env_torch == "2.0.1+cu118"
        assert vit.eager_mean_ms == pytest.approx(9.325) and vit.speedup == pytest.approx(9.325 / 7.584)
        assert vit.improvement_pct == pytest.approx((9.325 - 7.584) / 9.325 * 100) and vit.compile_s == 50.0
        assert vit.speedup_ci95_low < vit.speedup < vit.speedup_ci95_high and vit.verdict == "faster"
        assert vit.repeats == 3 and vit.iters_per_repeat == "3/3/3" and vit.min_effect == 0.05
        assert vit.achieved_tflops == pytest.approx(4e12 / 7.584e-3 / 1e12)
        # the fake A100 records no TF32 flag: float32 is read against the FP32 peak
        assert vit.peak_math == "FP32" and vit.peak_tflops == 19.5
        assert vit.peak_fraction == pytest.approx(vit.achieved_tflops / 19.5)
        oom = frame[frame.status == "oom"].iloc[0]
        assert oom.model == "detr" and pd.isna(oom.mean_ms) and oom.message == "out of memory"
    row = json.loads((tmp_path / "results.json").read_text())[0]
    assert all(not isinstance(v, (dict, list)) for v in row.values())


def test_charts_are_valid_png_and_svg_with_one_bar_per_model_and_variant(tmp_path):
    results = guide_results() + [
        fr.result("vit", 4, "eager", 15.0), fr.result("vit", 4, "default", 14.0),
        fr.result("resnet-50", 4, "eager", 6.6), fr.result("resnet-50", 4, "default", None, status="oom"),
        fr.result("vit", 1, "eager", 16.5, env=fr.T4), fr.result("vit", 1, "default", 15.8, env=fr.T4),
    ]
    made = charts.render(View(results), str(tmp_path))
    titles = [c.title for c in made]
    assert titles == [
        "Inference duration: A100, torch 2.0, batch size 1",
        "Improvement from torch.compile: A100, torch 2.0, batch size 1",
        "Inference duration: A100, torch 2.0, batch size 4",
        "Improvement from torch.compile: A100, torch 2.0, batch size 4",
        "Inference duration: T4, torch 2.0, batch size 1",
        "Improvement from torch.compile: T4, torch 2.0, batch size 1",
        "Improvement by batch size: A100, torch 2.0 - compile",
        "Improvement by hardware: batch size 1, compile",
    ]
    for c in made:
        with Image.open(c.png) as im:
            im.verify()
            assert im.format == "PNG"
        svg = ET.parse(c.svg).getroot()
        assert svg.tag.endswith("svg")
        ids = [e.get("id") for e in svg.iter() if (e.get("id") or "").startswith("bar-")]
        assert len(ids) == len(c.bars) == len(set(ids))
        assert c.title in Path(c.svg).read_text()  # the title is text in the SVG
    duration_b1, improvement_b1, duration_b4 = made[0], made[1], made[2]
    # its axis names the figure every table reads (it said "mean time per batch")
    assert "time per batch (ms): the median of each process" in Path(duration_b1.svg).read_text()
    assert len(duration_b1.bars) == 12 * 2 and len(improvement_b1.bars) == 12
    assert {b[1] for b in duration_b1.bars} == {"torch 2.0 - no compile", "torch 2.0 - compile"}
    # batch 4: resnet compiled ran out of memory: no bar, and the word OOM printed in its place
    assert sorted(duration_b4.bars) == sorted([
        ("Image Classification/ViT", "torch 2.0 - no compile"), ("Image Classification/ViT", "torch 2.0 - compile"),
        ("Image Classification/ResNet", "torch 2.0 - no compile")])
    assert ">OOM<" in Path(duration_b4.svg).read_text().replace(" OOM", "OOM")
    assert {b[1] for b in made[-1].bars} == {"A100, torch 2.0", "T4, torch 2.0"}


def test_compare_two_stores_side_by_side_with_the_ratio(tmp_path, here):
    tight = [1 / 1.001, 1.0, 1.001]
    fr.fill(tmp_path / "a.db", [fr.result("resnet-50", 1, "eager", 6.5, processes=[6.5 * x for x in tight]),
                                fr.result("resnet-50", 1, "default", 4.0, compile_s=30.0),
                                fr.result("vit", 1, "eager", 9.0)])
    fr.fill(tmp_path / "b.db", [fr.result("resnet-50", 1, "eager", 6.5, env=fr.CPU, processes=[6.5 * x for x in tight]),
                                fr.result("resnet-50", 1, "default", 2.0, env=fr.CPU, compile_s=5.0),
                                fr.result("detr", 1, "eager", None, env=fr.CPU, status="crashed")])
    p = here("compare", "a.db", "b.db")
    assert p.returncode == 0, p.stderr
    _, rows = md_table(p.stdout, "a.db vs b.db")
    by = {(r[0], r[2]): r for r in rows}
    assert by[("Image Classification/ResNet", "compile")][3:6] == ["4.000", "2.000", "0.500"]
    # two files that do not record their runs: different runs, the interval widened by the default drift
    assert by[("Image Classification/ResNet", "compile")][7:] == ["faster (across runs)", "30.0", "5.0",
                                                                  "0.17 (shorter)"]
    assert by[("Image Classification/ResNet", "no compile")][5:8][::2] == ["1.000", "inconclusive (across runs)"]
    assert "across runs: the two sides of such a verdict were measured in different runs" in p.stdout
    assert "±25% (the default: these results hold 0 pair(s) of runs" in p.stdout
    assert by[("Image Classification/ViT", "no compile")][3:6] == ["9.000", "not measured", ""]
    assert by[("Object Detection/DETR", "no compile")][3:5] == ["not measured", "crashed"]
    assert "A: a.db (A100, torch 2.0.1)" in p.stdout and "B: b.db (CPU (AMD EPYC 7B13, 2 threads), torch 2.13.0)" in p.stdout


def test_compare_reads_compile_seconds_beyond_how_far_one_compile_moves_from_another():
    """One cold compile a side has no interval: B's compile over A's is called longer or shorter only beyond how far
    one compile of a case moves from another (the default 25% here); the H200 leases of 11-27 and 11-28 read
    ResNet-50 1.22 (within noise), MobileNet 1.42 and DETR 1.37 (longer), as `check` gates them."""
    from compilebench.report import compare

    a = [fr.result(m, 1, "default", 5.0, compile_s=30.0) for m in ("resnet-50", "vit", "detr")]
    b = [fr.result(m, 1, "default", 5.0, compile_s=c) for m, c in (("resnet-50", 36.0), ("vit", 40.0), ("detr", 20.0))]
    t = compare.compare(a, b, "a.db", "b.db")
    said = {r["Task/Model"]: r["B/A compile"] for r in t.records()}
    assert said == {"Image Classification/ResNet": "1.20 (within noise)", "Image Classification/ViT": "1.33 (longer)",
                    "Object Detection/DETR": "0.67 (shorter)"}
    assert any(n.startswith("B/A compile: one cold compile a side") and "±25% (the default" in n for n in t.notes)


def test_compare_asks_which_machine_when_a_file_holds_several(tmp_path, here):
    fr.fill(tmp_path / "a.db", [fr.result("vit", 1, "eager", 9.0), fr.result("vit", 1, "eager", 19.0, env=fr.T4)])
    fr.fill(tmp_path / "b.db", [fr.result("vit", 1, "eager", 10.0, env=fr.CPU)])
    p = here("compare", "a.db", "b.db")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "pick one with --machine-a" in p.stderr
    p = here("compare", "a.db", "b.db", "--machine-a", "T4")
    assert p.returncode == 0, p.stderr
    assert "| Image Classification/ViT | 1 | no compile | 19.000 | 10.000 |" in p.stdout
    p = here("compare", "a.db", "b.db", "--machine-a", "H100")
    assert p.returncode == 2 and "no results in a.db from a machine matching --machine-a 'H100'" in p.stderr


class _Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: dict[str, int] = {}
        self.cells: list[str] = []
        self.imgs: list[str] = []
        self._in_td = False

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        self._in_td = tag == "td"
        if tag == "img":
            self.imgs.append(dict(attrs)["src"])
        if tag == "td":
            self.cells.append("")

    def handle_endtag(self, tag):
        if tag == "td":
            self._in_td = False

    def handle_data(self, text):
        if self._in_td:
            self.cells[-1] += text


def chromium() -> str:
    for name in (os.environ.get("COMPILEBENCH_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    pytest.fail("no Chromium to render the HTML report: `apt-get install chromium` (.ci/run does), "
                "or set COMPILEBENCH_CHROMIUM to a Chrome/Chromium binary")


def headless(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'chromium-profile'}"]
    return subprocess.run([chromium(), *flags, *args], capture_output=True, text=True, timeout=120)


def test_the_html_page_renders_in_chromium_and_shows_a_script_name_as_text(tmp_path):
    results = guide_results() + [fr.result("evil", 1, "eager", 3.0, label=EVIL),
                                 fr.result("evil", 1, "default", None, status="error", label=EVIL,
                                           message=f"ValueError: bad {EVIL} & more")]
    report.write(View(results), str(tmp_path / "out"), ("html",), [str(tmp_path / f"<b>{EVIL}.db")])
    page = tmp_path / "out" / "report.html"
    text = page.read_text()
    # the one script is the copy buttons' own; nothing remote
    assert text.count("<script") == 1 and f"<script>{html._SCRIPT}</script>" in text
    assert "http://" not in text.replace("http://www.w3.org", "")

    dom = headless(tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr
    assert "Content Security Policy" not in dom.stderr  # the policy lets the copy buttons' script run (its hash)
    parsed = _Dom()
    parsed.feed(dom.stdout)
    assert parsed.tags["script"] == 1  # the name did not become an element
    assert re.search(r"<title>compilebench report</title>", dom.stdout)  # nor ran
    assert parsed.tags["table"] >= 4  # summary, the guide's table, details, environment
    # each in a box of its own that scrolls where it is wider than the page (the details: three pages wide)
    assert text.count('<div class="wide"><table>') == text.count("<table") and "div.wide { overflow-x: auto; }" in text
    assert len(parsed.imgs) == 2 and all(src.startswith("data:image/svg+xml;base64,") for src in parsed.imgs)
    assert EVIL in parsed.cells  # shown as text, in a table cell
    assert any(c == "9.325" for c in parsed.cells) and "error" in parsed.cells

    shot = tmp_path / "report.png"
    p = headless(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri())
    assert p.returncode == 0, p.stderr
    with Image.open(shot) as im:
        assert im.format == "PNG" and im.size == (1280, 2000)
        colours = im.convert("RGB").getcolors(maxcolors=1 << 20)
        assert len(colours) > 20  # text, tables and charts were drawn, not a blank page


def test_run_writes_the_report_of_what_it_ran(tmp_path, cli):
    p = cli("run", "--model", "fault-ok", "--variant", "eager", "--iters", "3", "--warmup", "0", "--device", "cpu",
            "--isolation", "inline", "--db", "res/r.db", "--quiet")
    assert p.returncode == 0, p.stderr
    out = tmp_path / "res" / "report"
    assert sorted(os.listdir(out)) == ["charts", "report.html", "report.md", "results.csv", "results.json"]
    assert "report: " + str(Path("res") / "report" / "report.html") in p.stderr
    assert "Test/ok" in (out / "report.md").read_text()


def test_columns_keep_settings_apart_and_name_them_in_the_header():
    tiny = fr.result("vit", 1, "eager", 1.0, model_size="tiny")
    full = fr.result("vit", 1, "eager", 9.0)
    (g,) = View([tiny, full]).groups
    assert [c.header for c in g.columns] == ["torch 2.0 - no compile", "torch 2.0 - no compile, tiny config"]
    assert [speedups.mean(g.result("vit", c)) for c in g.columns] == pytest.approx([9.0, 1.0])


def test_torch_versions_sort_numerically_and_keep_apart_when_short_names_clash():
    def at(version):
        return fr.result("vit", 1, "eager", 1.0, env={**fr.A100, "torch": version, "hostname": version})

    (g,) = View([at("2.10.0"), at("2.9.1"), at("2.9.0+cu121")]).groups
    assert [c.torch for c in g.columns] == ["2.9.0", "2.9.1", "2.10"]


def test_the_hardware_chart_keeps_each_torch_version_of_one_hardware_apart(tmp_path):
    a100_21 = {**fr.A100, "torch": "2.1.0+cu118", "hostname": "a100-new"}
    results = [fr.result("vit", 1, "eager", 10.0), fr.result("vit", 1, "default", 8.0),
               fr.result("vit", 1, "eager", 10.0, env=a100_21), fr.result("vit", 1, "default", 5.0, env=a100_21),
               fr.result("vit", 1, "eager", 20.0, env=fr.T4), fr.result("vit", 1, "default", 19.0, env=fr.T4)]
    (chart,) = [c for c in charts.render(View(results), str(tmp_path)) if c.section == ("batch", 1)]
    assert chart.bars == [("Image Classification/ViT", "A100, torch 2.0"), ("Image Classification/ViT", "A100, torch 2.1"),
                          ("Image Classification/ViT", "T4, torch 2.0")]
    svg = Path(chart.svg).read_text()
    assert "20.0%" in svg and "50.0%" in svg and "5.0%" in svg  # each bar's own value


def test_speedup_table_has_the_ci_verdict_and_break_even(tmp_path):
    results = [fr.result("resnet-50", 1, "eager", 10.0),
               fr.result("resnet-50", 1, "default", 4.0, compile_s=30.0),
               fr.result("vit", 1, "eager", 9.0, processes=[8.0, 9.0, 10.125]),
               fr.result("vit", 1, "default", 9.1, processes=[8.0, 9.1, 10.35], compile_s=40.0),
               fr.result("beit", 1, "eager", 9.0), fr.result("beit", 1, "default", 20.0, status="mismatch", compile_s=1.0)]
    for rep in results[1].repeats[1:]:  # from the on-disk state the first left: a median, as far from sure
        rep.compile_s = 6.0
    for r, mib in zip(results[:2], (100, 150)):  # an allocator's peak: the same in every process
        for rep in r.repeats:
            rep.peak_mem_bytes, rep.peak_mem_kind = mib * 2**20, "cuda_max_allocated"
        r.derive()
    report.write(View(results), str(tmp_path), ("md", "csv"), ["r.db"])
    text = (tmp_path / "report.md").read_text()
    rows = {r["Task/Model"]: r for r in md_records(text.replace("## Speed-ups and compile cost\n", "### speedups\n"), "speedups")}
    resnet_cost = {k: rows["Image Classification/ResNet"][k] for k in (
        "status", "speed-up", "verdict", "interval from", "cold compile s", "warm compile s", "break-even (inferences)",
        "peak memory compiled / eager")}
    assert resnet_cost == {"status": "ok", "speed-up": "2.500x", "verdict": "faster", "interval from": "unpaired",
                           "cold compile s": "30.0 [24.0-37.5]", "warm compile s": "6.0 [4.8-7.5]",
                           "break-even (inferences)": "5,000",
                           "peak memory compiled / eager": "1.50x (150 / 100 MiB)"}
    vit = rows["Image Classification/ViT"]
    assert (vit["verdict"], vit["interval from"], vit["break-even (inferences)"]) == ("inconclusive", "unpaired", "never")
    assert (rows["Image Classification/BeiT"]["status"], rows["Image Classification/BeiT"]["speed-up"]) == ("mismatch", "")
    guide = {r["Task/Model"]: r for r in md_records(text, "A100 (batch size: 1)")}
    assert guide["Image Classification/BeiT"] == {  # a wrong model gets no speed-up
        "Task/Model": "Image Classification/BeiT", "torch 2.0 - no compile": "9.000", "torch 2.0 - compile": "mismatch",
        "% improvement": "", "95% CI": "", "verdict": "", "compile s": "1.0 [0.8-1.2]"}
    import pandas as pd

    frame = pd.read_csv(tmp_path / "results.csv")
    resnet = frame[(frame.model == "resnet-50") & (frame.variant == "default")].iloc[0]
    assert resnet.break_even_inferences == 5000 and resnet.verdict == "faster"
    assert resnet.speedup_ci95_low < 2.5 < resnet.speedup_ci95_high
    # the same interval in the speed-up table, the CSV and the guide table (as % improvement)
    low, high = (float(x.rstrip("x")) for x in rows["Image Classification/ResNet"]["95% CI"].split(" to "))
    assert (low, high) == (pytest.approx(resnet.speedup_ci95_low, abs=6e-4), pytest.approx(resnet.speedup_ci95_high, abs=6e-4))
    resnet_row = guide["Image Classification/ResNet"]
    assert resnet_row["95% CI"] == f"{resnet.improvement_ci95_low_pct:.1f}% to {resnet.improvement_ci95_high_pct:.1f}%"
    # the break-even at each end of that interval: eager's 10 ms over the interval's ends, 30 s of compile, 25% shorter
    # at the fewest and longer at the most (how far one compile moves from another: the default, in one run)
    ends = ((30.0 / 1.25, resnet.speedup_ci95_high), (30.0 * 1.25, resnet.speedup_ci95_low))
    fewest, most = (math.ceil(c / ((10.0 - 10.0 / x) / 1e3)) for c, x in ends)
    assert (resnet.break_even_fewest, resnet.break_even_most) == (fewest, most)
    assert (resnet.compile_s_low, resnet.compile_s_high) == (pytest.approx(24.0), pytest.approx(37.5))  # that compile
    assert rows["Image Classification/ResNet"]["break-even range"] == f"{fewest:,}-{most:,}"
    assert vit["break-even range"].endswith("-never")  # its interval reaches below 1x: that end never pays off


def test_the_recommendation_is_the_fastest_correct_variant_whose_verdict_is_faster(tmp_path):
    results = [
        fr.result("resnet-50", 1, "eager", 10.0),
        fr.result("resnet-50", 1, "default", 5.0, compile_s=20.0),
        fr.result("resnet-50", 1, "reduce-overhead", 4.0, compile_s=60.0),
        fr.result("resnet-50", 1, "max-autotune", 1.0, status="mismatch", compile_s=100.0),  # fastest, but wrong
        fr.result("vit", 1, "eager", 9.0, processes=[8.0, 9.0, 10.125]),
        fr.result("vit", 1, "default", 8.9, processes=[8.0, 8.9, 9.9], compile_s=40.0),
        # certainly faster, but by less than the 2% minimum effect: not worth compiling for
        fr.result("beit", 1, "eager", 10.0, processes=[10.0 / 1.0005, 10.0, 10.0 * 1.0005]),
        fr.result("beit", 1, "default", 9.95, processes=[9.95 / 1.0005, 9.95, 9.95 * 1.0005], compile_s=40.0),
    ]
    report.write(View(results), str(tmp_path), ("md",), ["r.db"])
    text = (tmp_path / "report.md").read_text().replace("## Recommendation\n", "### rec\n")
    rows = {r["Task/Model"]: r for r in md_records(text, "rec")}
    resnet = rows["Image Classification/ResNet"]
    s = View(results).speedup(results[0], results[2])  # its break-even at the ends of its interval, beside it
    fewest, most = stats.break_even_range(60.0, results[0].mean, s.low, s.high, drift.COMPILE_DEFAULT)
    assert (resnet["recommended"], resnet["speed-up"], resnet["break-even (inferences)"]) == (
        "compile (reduce-overhead)", "2.500x", f"10,000 [{fewest:,}-{most:,}]")
    picked = ("recommended", "speed-up", "95% CI", "break-even (inferences)", "why")
    vit = View(results).speedup(results[-4], results[-3])
    assert [rows["Image Classification/ViT"][k] for k in picked] == [
        "no compile", "", "", "", f"nothing measured is faster than eager beyond 5% (1 inconclusive: differences "
                                  f"under ±{vit.reach:.0%} are out of this run's reach; about "
                                  f"{vit.rounds_to_decide(0.05) - 3} more processes a side would decide it, at the "
                                  "same spread; more repeats or --interleave may decide)"]
    assert [rows["Image Classification/BeiT"][k] for k in picked] == [
        "no compile", "", "", "", "nothing measured is faster than eager beyond 5%"]


@pytest.mark.parametrize("name, dtype, tf32, expected", [
    ("NVIDIA H100 80GB HBM3", "bfloat16", False, ("H100 SXM", "BF16 tensor", 989.5)),
    ("NVIDIA H100 PCIe", "float32", True, ("H100 PCIe", "TF32 tensor", 378)),
    ("NVIDIA H200", "float16", False, ("H200 SXM", "FP16 tensor", 989.5)),
    ("NVIDIA A100-SXM4-80GB", "float32", False, ("A100", "FP32", 19.5)),
    ("NVIDIA A100-PCIE-40GB", "float32", True, ("A100", "TF32 tensor", 156)),
    ("NVIDIA A10", "float16", False, ("A10", "FP16 tensor", 125)),
    ("NVIDIA L4", "float32", True, ("L4", "TF32 tensor", 60)),
    ("Tesla T4", "float32", True, ("T4", "FP32", 8.1)),  # no TF32 on Turing: the flag changes nothing
    ("Tesla V100-SXM2-16GB", "float16", False, ("V100 SXM2", "FP16 tensor", 125)),
])
def test_peak_is_the_dense_datasheet_figure_of_the_math_the_dtype_uses(name, dtype, tf32, expected):
    p = peaks.peak(name, dtype, tf32)
    assert (p.device, p.math, p.tflops) == expected


@pytest.mark.parametrize("name, dtype", [
    ("Tesla T4", "bfloat16"),  # no BF16 math
    ("NVIDIA A10G", "float16"),  # not the A10: no datasheet figure, no guess
    ("NVIDIA H100 NVL", "float16"),
    ("NVIDIA GeForce RTX 4090", "float32"),
])
def test_no_peak_where_the_datasheet_does_not_say(name, dtype):
    assert peaks.peak(name, dtype, True) is None


def test_details_give_the_fraction_of_peak_on_known_gpus_only():
    h100 = {**fr.A100, "device_name": "NVIDIA H100 80GB HBM3", "hostname": "h100", "tf32_matmul": False,
            "tf32_cudnn": True}
    rtx = {**h100, "device_name": "NVIDIA GeForce RTX 4090", "hostname": "rtx"}
    results = [fr.result("vit", 1, "eager", 2.0, env=h100), fr.result("vit", 1, "eager", 1.0, env=h100, dtype="bfloat16"),
               fr.result("vit", 1, "eager", 2.0, env=rtx), fr.result("vit", 1, "eager", 100.0, env=fr.CPU)]
    for r in results:
        r.flops = int(98.9e9)
    table = details.details_table(View(results))
    of_peak = {(row["hardware"], row["variant"]): row["of peak"] for row in table.records()}
    # 98.9 GFLOP in 2 ms is 49.45 TFLOP/s: 10% of TF32's 494.5 (cuDNN may use TF32); in 1 ms of bf16 also 10%, of 989.5
    assert of_peak == {("H100", "no compile"): "10.0% TF32 tensor", ("H100", "no compile, bfloat16"): "10.0% BF16 tensor",
                       ("NVIDIA GeForce RTX 4090", "no compile"): "", ("CPU (AMD EPYC 7B13, 2 threads)", "no compile"): ""}
    assert any("H100 SXM TF32 tensor 494.5" in n and "H100 SXM BF16 tensor 989.5" in n for n in table.notes)


def test_charts_draw_intervals_mark_inconclusive_bars_and_keep_durations_above_zero(tmp_path):
    results = [
        # two wildly different processes (the N=2 DETR of issue 13): a wide interval, all of it above zero
        fr.result("detr", 1, "eager", 1.0, processes=[500.0, 5000.0]),
        fr.result("detr", 1, "default", 1500.0, processes=[1400.0, 1600.0]),
        fr.result("resnet-50", 1, "eager", 10.0), fr.result("resnet-50", 1, "default", 5.0),
    ]
    made = charts.render(View(results), str(tmp_path))
    duration, improvement = made[0], made[1]
    assert duration.xlim[0] >= 0
    assert improvement.inconclusive == [("Object Detection/DETR", "torch 2.0 - compile")]
    svg = Path(improvement.svg).read_text()
    assert "inconclusive" in svg and "faster" in svg
    (table,) = tables.guide_tables(View(results))
    rows = {r["Task/Model"]: r for r in table.records()}
    detr = rows["Object Detection/DETR"]
    assert detr["verdict"] == "inconclusive" and f"{detr['% improvement']} inconclusive" in svg  # the same number in both
    assert f"{rows['Image Classification/ResNet']['% improvement']} faster" in svg


def test_a_bar_label_past_a_long_whisker_stays_inside_the_axes():
    """The quick suite's ResNet (-11.1%, interval down to -62.9%) put its label over the model names."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 2), layout="constrained")
    ax = fig.subplots()
    ax.barh(0, -11.1, xerr=[[51.8], [35.4]])
    ax.barh(1, 52.6, xerr=[[7.5], [6.5]])
    texts = [ax.text(-62.9 - 1, 0, "-11.1% inconclusive", ha="right", va="center", fontsize=7),
             ax.text(59.1 + 1, 1, "52.6% faster", ha="left", va="center", fontsize=7)]
    ax.set_yticks([0, 1], ["Image Classification/ResNet", "Object Detection/DETR"])
    ax.margins(x=0.15)
    drawing.fit_labels(fig, ax, texts)
    fig.draw_without_rendering()
    box = ax.get_window_extent()
    for t in texts:
        extent = t.get_window_extent()
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1, (t.get_text(), extent, box)


def test_a_start_up_charts_notes_stay_inside_the_axes(tmp_path, monkeypatch):
    """The quick suite's DETR on this project's VM: its cold start's note, "41.94 [33.60-52.36] s; 608.482
    [552.278-670.407] ms per call after", ran off the figure at "afte"."""
    figures = []
    monkeypatch.setattr(drawing, "save", lambda fig, stem: figures.append(fig) or (stem + ".png", stem + ".svg"))
    notes = [("  1.20 s; 955.271 [784.737-1162.864] ms per call after", False),
             ("  41.94 [33.60-52.36] s; 608.482 [552.278-670.407] ms per call after", False),
             ("  6.83 [5.51-8.47] s; 608.482 [552.278-670.407] ms per call after", False)]
    drawing.stacked(("start", "t"), "Start-up: Object Detection/DETR", ["no compile", "compile, cold start",
                    "compile, warm cache"], {"build": [0.2, 0.2, 0.2], "first call": [1.0, 41.7, 6.6]},
                    str(tmp_path / "s"), "seconds until the first answer", notes)
    (fig,) = figures
    fig.draw_without_rendering()
    ax = fig.axes[0]
    box = ax.get_window_extent()
    for t in ax.texts:
        extent = t.get_window_extent()
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1, (t.get_text(), extent, box)


def test_a_long_title_and_axis_words_stay_inside_the_figure(tmp_path, monkeypatch):
    """The quick suite's charts on this project's VM: "..., torch 2.13, batch si" and the axis's "with 95% CI betwe"
    were cut at the figure's edge."""
    figures = []
    monkeypatch.setattr(drawing, "save", lambda fig, stem: figures.append(fig) or (stem + ".png", stem + ".svg"))
    hardware = "CPU (Intel(R) Xeon(R) Processor, 2 threads)"
    series = [drawing.Series("torch 2.13 - compile, interleaved", [32.7, 11.2, 51.3], [(8, 8), (3, 3), (2, 2)])]
    labels = ["Object Detection/DETR", "Image Classification/ResNet", "Image Segmentation/MobileNet"]
    chart = drawing.bars(("g",), f"Improvement from torch.compile: {hardware}, torch 2.13, batch size 1", labels,
                         series, charts.IMPROVEMENT_AXIS + ", and more words to make it longer than any axis holds",
                         str(tmp_path / "c"), improvement=True)
    (fig,) = figures
    fig.draw_without_rendering()
    edge = fig.get_window_extent()
    for artist in (fig._suptitle, fig.axes[0].xaxis.label):
        box = artist.get_window_extent()
        assert edge.x0 <= box.x0 and box.x1 <= edge.x1, (artist.get_text(), box, edge)
    assert chart.title.endswith("batch size 1")  # the chart keeps its title whole for the page


def test_the_html_page_holds_the_same_numbers_as_the_markdown(tmp_path):
    results = guide_results()
    report.write(View(results), str(tmp_path), ("md", "html"), ["r.db"])
    md = (tmp_path / "report.md").read_text()
    page = (tmp_path / "report.html").read_text()
    for row in md_records(md, "A100 (batch size: 1)"):
        for value in (row[k] for k in ("torch 2.0 - no compile", "torch 2.0 - compile", "% improvement", "95% CI", "verdict")):
            assert f"<td>{value}</td>" in page or f'<td class="fail">{value}</td>' in page


def generation_result(model, mode, ttft, per_token, *, status="ok", first=(30.0, 2.0, 0.2), **kw):
    r = fr.result(model, 1, mode, ttft + per_token * 7, env=fr.CPU, status=status, prompt_len=16, new_tokens=8, **kw)
    for rep in r.repeats:
        scale = rep.stats.mean / (ttft + per_token * 7)
        rep.generation = GenerateCalls.from_dict({
            "new_tokens": 8, "batch_size": 1, "prompt_len": 16, "ttft_ms": [ttft * scale] * 3,
            "per_token_ms": [per_token * scale] * 3,
            "first_calls": [{"total_ms": s * 1e3, "ttft_ms": 1.0, "per_token_ms": 1.0} for s in first]})
    r.derive()
    return r


def test_generation_results_get_their_table_and_compile_curve(tmp_path):
    results = [generation_result("smollm2-135m", "eager", 40.0, 10.0),
               generation_result("smollm2-135m", "eager-static-cache", 42.0, 9.0),
               generation_result("smollm2-135m", "default", 20.0, 5.0)]
    (table,) = tables.generation_tables(View(results))
    assert table.title == "CPU (AMD EPYC 7B13, 2 threads) (batch size: 1, prompt: 16 tokens, 8 new tokens)"
    rows = {r["variant"]: r for r in table.records()}
    eager, compiled = rows["torch 2.13 - no compile"], rows["torch 2.13 - compile"]
    figures = ("TTFT ms", "ms/token", "decode tokens/s")
    assert [eager[k] for k in figures] == ["40.000", "10.000", "100.0"]  # 1000 / 10 ms per token
    assert [compiled[k] for k in figures] == ["20.000", "5.000", "200.0"]
    per_token = compiled["per token vs no compile"]
    assert per_token.startswith("50.0% (") and per_token.endswith(") faster")
    assert compiled["first calls s (repeat 1)"] == "30.00 / 2.00 / 0.20"  # the first calls of repeat 1, in seconds
    assert rows["torch 2.13 - no compile, static cache"]["TTFT vs no compile"].endswith(("inconclusive", "slower"))  # 42 vs 40 ms
    assert eager["TTFT vs no compile"] == ""  # the baseline is not compared with itself
    made = charts.render(View(results), str(tmp_path))
    (curve,) = [c for c in made if c.title.startswith("First generate() calls")]
    assert len(curve.bars) == 3 and "log scale" in Path(curve.svg).read_text()
    report.write(View(results), str(tmp_path / "out"), ("md", "csv"), ["r.db"])
    import pandas as pd

    frame = pd.read_csv(tmp_path / "out" / "results.csv")
    c = frame[frame.variant == "default"].iloc[0]
    assert c.per_token_ms == pytest.approx(5.0) and c.decode_tokens_per_s == pytest.approx(200.0)
    assert c.per_token_verdict == "faster" and c.per_token_speedup == pytest.approx(2.0)
    assert c.e2e_tokens_per_s == pytest.approx(8 * 1e3 / 55.0)


def test_csv_cells_that_a_spreadsheet_would_run_are_escaped(tmp_path):
    import pandas as pd

    evil = fr.result("=HYPERLINK(\"http://x\")", 1, "eager", None, status="error", message="-2+3 @SUM(A1)",
                     label="+cmd|' /C calc'!A0")
    fine = fr.result("resnet-50", 1, "eager", 10.0)
    slower = fr.result("resnet-50", 1, "default", 12.0)
    report.write(View([evil, fine, slower]), str(tmp_path), ("csv", "json"), ["r.db"])
    frame = pd.read_csv(tmp_path / "results.csv")
    row = frame[frame.status == "error"].iloc[0]
    assert row.model == "'=HYPERLINK(\"http://x\")" and row.message == "'-2+3 @SUM(A1)" and row.label.startswith("'+cmd")
    assert frame[frame.variant == "default"].iloc[0].improvement_pct < 0  # a negative number stays a number
    rows = json.loads((tmp_path / "results.json").read_text())
    assert any(r["model"] == "=HYPERLINK(\"http://x\")" for r in rows)  # JSON is data, not a spreadsheet


def test_the_report_counts_the_results_carrying_each_flag(tmp_path):
    results = [fr.result("resnet-50", 1, "eager", 10.0, flags=("busy",)),
               fr.result("resnet-50", 1, "default", 5.0, flags=("busy", "noisy")), fr.result("vit", 1, "eager", 9.0)]
    report.write(View(results), str(tmp_path), ("md",), ["r.db"])
    text = (tmp_path / "report.md").read_text()
    assert "Flags: 1 noisy, 2 busy, 0 throttled, 0 clock, 0 cudagraphs-skipped." in text
    assert "busy: 2 result(s). Other processes used the CPU while the timed loop ran" in text
    detail = details.details_table(View(results))
    assert [r["flags"] for r in detail.records()] == ["", "busy", "noisy, busy"]  # the guide's order: ViT first


def test_a_read_only_results_file_is_reported(tmp_path, here):
    import stat

    fr.fill(tmp_path / "r.db", guide_results()[:2])
    os.chmod(tmp_path / "r.db", stat.S_IRUSR)
    p = here("report", "r.db", "--out", "out", "--format", "md")
    assert p.returncode == 0, p.stderr
    assert "Image Classification/ViT" in (tmp_path / "out" / "report.md").read_text()


def test_a_report_folder_that_cannot_be_written_is_one_line(tmp_path, here):
    fr.fill(tmp_path / "r.db", guide_results()[:2])
    (tmp_path / "afile").write_text("x")
    for out, message in (("afile/sub", "is a file, not a folder"), ("/proc/compilebench-report", "is not writable")):
        p = here("report", "r.db", "--out", out)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and message in p.stderr, p.stderr
    assert sorted(os.listdir(tmp_path)) == ["afile", "r.db"]


def test_fields_a_newer_compilebench_wrote_are_reported_and_re_exported(tmp_path, here):
    r = fr.result("vit", 1, "eager", 9.0)
    r.extra["energy_joules"] = 1.5  # as a newer compilebench would have written them
    r.case_extra["future_setting"] = "x"
    fr.fill(tmp_path / "r.db", [r])
    p = here("report", "r.db", "--out", "out", "--format", "md,json")
    assert p.returncode == 0, p.stderr
    (row,) = json.loads((tmp_path / "out" / "results.json").read_text())
    assert row["energy_joules"] == 1.5


def _guide_rows(path) -> list[list[str]]:
    """Every cell of the guide's tables, read from the guide itself (tests/data/perf_torch_compile.md): section,
    GPU, model label, batch size, no compile, compile."""
    import re

    rows, section, gpu, batch = [], "main", None, None
    for line in open(path, encoding="utf-8"):
        if line.startswith("## "):
            section = {"PyTorch Nightly": "nightly", "Reduce Overhead": "reduce-overhead"}.get(line[3:].strip(), "main")
        heading = re.match(r"^###\s+(\w+)(?: \(batch size: (\d+)\))?", line)  # one heading has a no-break space
        if heading:
            gpu, batch = heading.groups()
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and "/" in cells[0] and not cells[0].startswith("**"):
            label, b, eager, compiled = cells if len(cells) == 4 else (cells[0], batch, *cells[1:])
            rows.append([section, gpu, label, "1" if b == "Unbatched" else b, eager, compiled])
    return rows


def test_the_guides_figures_are_shipped_as_published():
    from compilebench.report import reference

    figures = reference.load("guide")
    shipped = [[f.table, f.gpu, f.label, str(f.batch_size), "OOM" if f.eager_ms is None else f"{f.eager_ms:g}",
                "OOM" if f.compiled_ms is None else f"{f.compiled_ms:g}"] for f in figures]
    published = [[*r[:4], *(x if x == "OOM" else f"{float(x):g}" for x in r[4:])]
                 for r in _guide_rows(Path(__file__).parent / "data" / "perf_torch_compile.md")]
    assert shipped == published and len(shipped) == 136
    assert {(f.table, f.torch, f.variant) for f in figures} == {("main", "2.0.1", "default"),
                                                                ("nightly", "2.1.0.dev", "default"),
                                                                ("reduce-overhead", "2.1.0.dev", "reduce-overhead")}
    assert {f.model for f in figures} == set(suites.GUIDE_MODELS)


def test_report_reference_guide_sets_the_guides_speedups_beside_yours(tmp_path, here):
    quick = []
    for model, eager, compiled in (("resnet-50", 40.0, 44.0), ("deeplabv3-mobilenet", 30.0, 20.0), ("detr", 300.0, 160.0)):
        quick += [fr.result(model, 1, "eager", eager, env=fr.CPU), fr.result(model, 1, "default", compiled, env=fr.CPU)]
    fr.fill(tmp_path / "r.db", quick + [fr.result("resnet-50", 4, "reduce-overhead", 9.0, env=fr.CPU),
                                        fr.result("resnet-50", 4, "eager", 10.0, env=fr.CPU)])
    done = here("report", "r.db", "--out", "out", "--reference", "guide", "--format", "md,html,csv")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "out" / "report.md").read_text()
    header, rows = md_table(text, "Your speed-ups beside the guide's")
    assert header[:6] == ["Task/Model", "Batch Size", "yours", "speed-up", "95% CI", "verdict"]
    assert {"guide A100, torch 2.0.1", "guide V100, torch 2.0.1", "guide T4, torch 2.0.1",
            "guide A100 reduce-overhead, torch 2.1.0.dev"} <= set(header)
    got = {(r[0], r[1], r[2].split(" - ")[-1]): dict(zip(header, r)) for r in rows}
    resnet = got[("Image Classification/ResNet", "1", "compile")]
    assert resnet["guide A100, torch 2.0.1"] == f"{6.531 / 4.124:.3f}x" and resnet["speed-up"] == "0.909x"
    assert resnet["guide T4, torch 2.0.1"] == f"{6.031 / 4.321:.3f}x"
    detr = got[("Object Detection/DETR", "1", "compile")]
    assert detr["guide A100, torch 2.1.0.dev"] == f"{30.484 / 15.221:.3f}x"  # its nightly table holds DETR
    ro = got[("Image Classification/ResNet", "4", "compile (reduce-overhead)")]
    assert ro["guide T4 reduce-overhead, torch 2.1.0.dev"] == f"{15.215 / 13.871:.3f}x" and ro["guide A100, torch 2.0.1"] == ""
    assert "Your hardware is not the guide's" in text and "torch 2.0.1" in text and "no verdict is drawn" in text
    assert "guide A100, torch 2.0.1" in (tmp_path / "out" / "report.html").read_text()
    pairs = list(csv.DictReader(open(tmp_path / "out" / "reference.csv")))
    one = [p for p in pairs if p["model"] == "resnet-50" and p["batch_size"] == "1" and p["reference_gpu"] == "A100"]
    assert len(one) == 1 and float(one[0]["reference_speedup"]) == pytest.approx(6.531 / 4.124)
    assert float(one[0]["speedup"]) == pytest.approx(40 / 44, rel=1e-3)
    bad = here("report", "r.db", "--out", "out2", "--reference", "paper")
    assert bad.returncode == 2 and "reference" in bad.stderr and "guide" in bad.stderr and not (tmp_path / "out2").exists()


def _peaks(r, mib: float):
    for rep in r.repeats:
        rep.peak_mem_bytes, rep.peak_mem_kind = int(mib * 2 ** 20), "cuda_steady"
    r.derive()
    return r


def test_the_suite_summary_gives_the_pass_rate_speed_up_and_memory_compression():
    """Issue 53, as the HUD's compilers dashboard: the pass rate (cases ok over cases run), and per compiled setting
    the geomean speed-up and memory compression (eager peak / compiled peak) over the models ok both ways."""
    results = [_peaks(fr.result("vit", 1, "eager", 10.0), 100), _peaks(fr.result("vit", 1, "default", 5.0), 50),
               _peaks(fr.result("beit", 1, "eager", 10.0), 100), _peaks(fr.result("beit", 1, "default", 8.0), 80),
               fr.result("detr", 1, "eager", 10.0), fr.result("detr", 1, "default", 9.0, status="mismatch")]
    view = View(results)
    (row,) = suite.summary_table(view).records()
    assert (row["pass rate"], row["models"], row["geomean speed-up"], row["memory compression"]) == \
        ("2/3 (67%)", "2", "1.58x", "1.58x")
    assert suite.pass_rate(view) == "5 of 6 case(s) ok (83%)"
    said = terminal.summary(view, 100)
    assert "pass rate: 5 of 6 case(s) ok (83%)" in said
    (summed,) = suite.summaries(view)
    low, high = summed.geomean_interval  # the models' log half-widths in quadrature, over their count
    halves = [math.log(s.high / s.low) / 2 for s in (view.speedup(*results[:2]), view.speedup(*results[2:4]))]
    assert math.log(high / low) / 2 == pytest.approx(math.hypot(*halves) / 2) and low < 1.58 < high
    assert row["geomean 95% CI"] == f"{low:.2f}x to {high:.2f}x"
    assert (f"pass rate 2/3 (67%), geomean speed-up 1.58x [{low:.2f}-{high:.2f}] over 2 model(s), memory "
            "compression 1.58x") in " ".join(said.split())


def test_a_cpus_peak_memory_that_moves_between_processes_reads_as_a_ratio_with_its_interval():
    """A CPU's peak RSS moves from one process to another (the quick suite's DETR: 1,086, 1,110 and 1,278 MiB over
    three of one run): the speed-up table read the largest process's of each side as an exact ratio, and `check`
    the processes' (log space) with an interval. One rule now: the table, the suite's compression and `check`."""
    def rss(r, mib):
        for rep, m in zip(r.repeats, mib):
            rep.peak_mem_bytes, rep.peak_mem_kind = int(m * 2 ** 20), "host_max_rss"
        r.derive()
        return r

    eager, compiled = rss(fr.result("vit", 1, "eager", 10.0), [1086, 1110, 1278]), \
        rss(fr.result("vit", 1, "default", 5.0), [1180, 1300, 1400])
    view = View([eager, compiled])
    logs = [math.log(m) for m in (1086, 1110, 1278)], [math.log(m) for m in (1180, 1300, 1400)]
    means = [sum(side) / 3 for side in logs]
    ratio = math.exp(means[1] - means[0])
    _, low, high = stats.ratio([1086, 1110, 1278], [1180, 1300, 1400])  # Welch, as a latency's between processes
    assert low < ratio < high and high / low > 1.2  # three processes a side: far from exact
    (cost,) = tables.speedup_table(view).records()
    assert cost["peak memory compiled / eager"] == (f"{ratio:.2f}x [{low:.2f}-{high:.2f}] "
                                                    f"({math.exp(means[1]):,.0f} / {math.exp(means[0]):,.0f} MiB)")
    (row,) = suite.summary_table(view).records()  # eager's over compiled's: the same, turned over
    assert row["memory compression"] == f"{1 / ratio:.2f}x [{1 / high:.2f}-{1 / low:.2f}]"


def test_the_variants_of_one_process_have_one_peak_and_no_memory_ratio():
    """Interleaved, eager and compiled share each process, whose peak is both's: the README's quick suite read
    'memory compression 1.00x' for every model on a CPU and on an H200. Not compared, and said so."""
    ids = ["p1", "p2", "p3"]
    results = [_peaks(fr.result("vit", 1, "eager", 10.0, interleave=True, process_ids=ids), 100),
               _peaks(fr.result("vit", 1, "default", 5.0, interleave=True, process_ids=ids), 100)]
    view = View(results)
    (row,) = suite.summary_table(view).records()
    assert (row["geomean speed-up"], row["memory compression"]) == ("2.00x", "")
    said = " ".join(terminal.summary(view, 100).split())
    assert "memory compression" not in said.split("ms: ")[0]
    assert "memory not compared (each process held both variants: --no-interleave measures it)" in said
    (cost,) = tables.speedup_table(view).records()
    assert cost["peak memory compiled / eager"] == "one process held both"
