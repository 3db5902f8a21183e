"""The result schema declared once (issue 51): typed records per concern, stored as the plain dicts they replace,
keys a newer compilebench wrote kept and written back; a Result's figures declared once (Figures) and derived from
its repeats, never fields it stores (issue 56)."""

import dataclasses
import json

from compilebench.core.case import Case
from compilebench.core.repeat import METRICS, Figures, Repeat
from compilebench.core.result import Result
from compilebench.core.served import ShapesServed
from compilebench.core.starts import AotPackage, Start
from compilebench.core.variant import Variant

# Mappings by nature: their keys are open (phase names, block classes, a task's checks).
MAPPINGS = {"phases", "regions", "agreement", "quality", "extra"}


def test_a_results_figures_are_declared_once_and_derived_never_stored():
    figures = {f.name for f in dataclasses.fields(Figures)}
    assert figures == {f.name for f in METRICS} and len(figures) > 25
    assert figures <= {f.name for f in dataclasses.fields(Repeat)}
    assert not figures & {f.name for f in dataclasses.fields(Result)}  # what it stores: its case, identity, repeats
    r = Result(Case("vit", 1, Variant()), [Repeat(graphs=2), Repeat(index=2, graphs=3)])
    assert r.graphs == 3 and all(name in vars(r) for name in figures)  # each derived by its rule
    assert not figures & set(r.to_dict())


def test_no_dict_field_on_a_repeat_or_a_result_but_the_mappings_by_nature():
    for cls in (Repeat, Result):
        plain = {f.name for f in dataclasses.fields(cls) if str(f.type).startswith("dict")}
        assert plain <= MAPPINGS | {"case_extra"}, (cls.__name__, plain - MAPPINGS)
    assert {f.name for f in dataclasses.fields(Result) if str(f.type).startswith("dict")} == {"extra", "case_extra"}


def test_a_record_is_stored_as_the_dict_it_replaced_and_keeps_what_a_newer_version_wrote():
    assert Start().to_dict() == {} and not Start() and not AotPackage()  # nothing recorded: {}, false
    assert Start(load_s=0.4, first_call_s=0.2).to_dict() == {"load_s": 0.4, "first_call_s": 0.2}  # a None left out
    stored = {"served": ["b1"], "per_shape": {"b1": {"first_call_s": 1.5, "compiles": 0, "from_a_newer_one": [1]}},
              "new_key": "kept"}
    back = ShapesServed.from_dict(json.loads(json.dumps(stored)))
    assert back.per_shape["b1"].compiles == 0 and back.per_shape["b1"].first_call_s == 1.5
    again = back.to_dict()
    assert again["new_key"] == "kept" and again["per_shape"]["b1"]["from_a_newer_one"] == [1]
    assert again["per_shape"]["b1"]["compiles"] == 0  # a count of 0 is known: stored


def test_a_repeat_with_its_records_comes_back_whole_from_its_dict():
    rep = Repeat(index=2, start={"build_s": 0.1, "first_call_s": 2.0}, aot_inductor={"built": True, "load_s": 0.3},
                 shapes={"served": ["b1"], "per_shape": {"b1": {"first_call_s": 1.0, "samples_ms": [1.0, 2.0]}}})
    assert isinstance(rep.start, Start) and rep.aot_inductor.built
    back = Repeat.from_dict(json.loads(json.dumps(rep.to_dict())))
    assert back == rep and back.shapes.per_shape["b1"].steady_ms == 1.5
