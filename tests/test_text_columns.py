"""The terminal's text tables: a name may be cut to fit, a figure never (the quantization table's quality cell read
"pixel_class 87.~" at 100 columns)."""

import fakeresults as fr

from compilebench.report import terminal
from compilebench.report.text_columns import fit
from compilebench.report.view import View


def test_a_wrapped_column_goes_on_below_its_row_broken_between_its_items():
    header = ["name", "ms", "quality"]
    body = [["a", "1.000", "top1 98.1%, top5 100%, pixel_class 87.3%"], ["b", "2.000", "top1 100%"]]
    lines = fit(header, body, 30, free=(0,), left=(0, 2), optional=(), wrap=(2,))
    assert lines == ["name     ms  quality",
                     "a     1.000  top1 98.1%",
                     "             top5 100%",
                     "             pixel_class 87.3%",
                     "b     2.000  top1 100%"]
    # where it fits, one line with its commas, as before
    assert fit(header, body, 80, wrap=(2,), left=(0, 2))[1] == "a     1.000  top1 98.1%, top5 100%, pixel_class 87.3%"


def test_the_quantization_table_keeps_each_quality_whole_at_100_columns():
    def res(mode, processes, q="none"):
        r = fr.result("deeplabv3-mobilenet", 1, mode, processes[1], env=fr.CPU, processes=processes, quantize=q)
        for rep in r.repeats:
            rep.quality = {"pixel_class": 0.873, "top1": 0.996} if q != "none" else {}
        r.derive()
        return r

    view = View([res("eager", [10.0, 10.1, 9.9]), res("default", [8.0, 8.1, 7.9]),
                 res("eager", [6.0, 6.1, 5.9], "int8-dynamic"), res("default", [9.0, 10.6, 8.7], "int8-dynamic")],
                0.05)
    text = "\n".join(terminal.quantization_summary(view, 100))
    assert "~" not in text
    assert text.count("pixel_class 87.3%") == 2 and text.count("top1 99.6%") == 2


def test_a_wrapped_column_narrower_than_an_item_breaks_it_between_words_never_within_one():
    header = ["name", "ms", "quality"]
    body = [["a", "1.000", "pixel_class 87.3%, top1 99.6%"]]
    lines = fit(header, body, 25, free=(0,), left=(0, 2), optional=(), wrap=(2,))
    assert lines == ["name     ms  quality",
                     "a     1.000  pixel_class",
                     "             87.3%",
                     "             top1 99.6%"]
    assert max(map(len, lines)) <= 25
