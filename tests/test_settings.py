"""Every case setting reaches everything it must: the grid a run makes, the resume key, the report (its own cell
of a table, named in the header) and the CSV. The settings are read from their declaration, so a new setting is
checked here without editing this file, and a setting left out of one place fails here."""

from __future__ import annotations

import fakeresults as fr
import pytest

from compilebench.core import settings
from compilebench.core.case import Case
from compilebench.core.spec import ModelKind, RunSpec
from compilebench.core.variant import Variant
from compilebench.report import data, flat
from compilebench.report.view import View

VISION, TEXT, IMAGE = "resnet-50", "smollm2-135m", "sd-1.5"
KINDS = {TEXT: ModelKind("generation", 128), IMAGE: ModelKind("image", default_steps=50)}
SETTINGS = settings.fields()


def _changed(f) -> dict:
    """The setting at its example value, with what validation asks to go with it."""
    companion = {"dtype": "bfloat16"} if f.name == "autocast" else {}
    return {**companion, f.name: f.metadata["example"]}


def _model(f) -> str:
    return {"generation": TEXT, "image": IMAGE}.get(f.metadata["only"], VISION)


@pytest.mark.parametrize("f", SETTINGS, ids=lambda f: f.name)
def test_each_setting_is_declared_whole(f):
    assert f.metadata["example"] is not None and f.metadata["example"] != f.default
    assert (f.metadata["words"] is None) != (f.metadata["shown"] is None)


@pytest.mark.parametrize("f", SETTINGS, ids=lambda f: f.name)
def test_a_run_gives_each_case_the_setting_and_it_changes_the_resume_key(f):
    model = _model(f)
    plain = RunSpec(models=(model,), device="cpu", variants=("eager", "default")).cases(KINDS)
    changed = RunSpec(**{"models": (model,), "device": "cpu", "variants": ("eager", "default"), **_changed(f)}).cases(KINDS)
    if f.name == "quantize":  # a quantized run measures eager in float beside it: the baseline it is read against
        baseline, *changed = changed
        assert baseline.key() == plain[0].key()
    assert [getattr(c, f.name) for c in changed] == [f.metadata["example"]] * 2
    assert {c.key() for c in plain}.isdisjoint(c.key() for c in changed)


@pytest.mark.parametrize("f", SETTINGS, ids=lambda f: f.name)
def test_the_other_kind_of_model_keeps_the_setting_at_its_default(f):
    if f.metadata["only"] is None:
        pytest.skip(f"{f.name} applies to every model")
    other = VISION if f.metadata["only"] == "generation" else TEXT
    spec = RunSpec(**{"models": (other,), "device": "cpu", **_changed(f)})
    (case, _) = spec.cases(KINDS)
    assert getattr(case, f.name) == f.default


def _result(f, **changes) -> dict:
    env = {**fr.CPU, "device": changes.get("device", "cpu")}
    gen = {"prompt_len": 16, "new_tokens": 8} if _model(f) == TEXT else {}
    r = fr.result(_model(f), 1, "default", 10.0, env=env, **{**gen, **{k: v for k, v in changes.items() if k != "device"}})
    if "task" in changes:  # a run given --task builds the model for that task: the result's task is the one given
        r.task = changes["task"]
    return r


@pytest.mark.parametrize("f", SETTINGS, ids=lambda f: f.name)
def test_the_report_gives_the_setting_its_own_cell_and_the_csv_its_column(f):
    plain, changed = _result(f), _result(f, **_changed(f))
    cells = [(g.title, model, column.header) for g in View([plain, changed]).groups for (model, column) in g.cells]
    assert len(set(cells)) == 2, f"{f.name}: two results that differ only in it share a cell of the report"
    if f.metadata["words"]:
        assert data.settings(changed) != data.settings(plain)
    row = {r["result_id"]: r for r in flat.rows(View([plain, changed]))}[changed.result_id]
    assert row[f.name] == f.metadata["example"]


def test_a_setting_without_words_or_a_place_in_the_report_is_refused():
    with pytest.raises(TypeError):
        settings.setting(None, example=1)


def test_late_settings_leave_the_key_at_their_default():
    d = Case("vit", 1, Variant()).to_dict()
    key = Case("vit", 1, Variant()).key()
    for name in settings.key_defaults():
        assert f'"{name}"' not in key and name in d
