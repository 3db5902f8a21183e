"""Random weights drawn once a run and loaded by every process (measure/weights.py): the same tensors as a seeded
build, ties and non-persistent buffers kept, the draw a phase of its own, once."""

import os

import pytest
import torch

from compilebench import zoo
from compilebench.core.case import Case
from compilebench.core.variant import Variant
from compilebench.measure import weights
from compilebench.zoo.models import MODELS
from compilebench.zoo.textgen import MODELS as TEXT_MODELS


def tensors(model) -> dict:
    return {n: t for n, t in [*model.named_parameters(remove_duplicate=False), *model.named_buffers(remove_duplicate=False)]}


def seeded(entry, size="tiny"):
    torch.manual_seed(weights.SEED)
    return entry.build("random", size)


class Counting:
    """A zoo entry that counts its builds, and on which device each was asked for."""

    def __init__(self, entry):
        self.entry, self.builds = entry, []

    def __getattr__(self, name):
        return getattr(self.entry, name)

    def build(self, weights_, size):
        self.builds.append(str(torch.empty(0).device))
        return self.entry.build(weights_, size)


ZOO = [m.name for m in [*MODELS, *TEXT_MODELS]]


@pytest.mark.parametrize("name", ZOO)
def test_a_loaded_model_holds_the_seeded_draw_with_its_ties_and_buffers(tmp_path, name):
    """Every zoo model's skeleton, built on the meta device, takes the saved tensors: none is built in full twice."""
    entry = Counting(zoo.get(name))
    case = Case(name, 1, Variant("eager"), device="cpu", model_size="tiny")
    phases = []
    reused = weights.reusing(entry, case, str(tmp_path), phases.append)
    assert phases == [weights.MAKING] and entry.builds == ["cpu"]
    assert weights.reusing(entry, case, str(tmp_path), phases.append).path == reused.path and len(phases) == 1
    loaded, expected = reused.build("random", "tiny"), seeded(entry.entry)
    assert entry.builds == ["cpu", "meta"]  # the draw, then the skeleton: no build in full
    got, want = tensors(loaded), tensors(expected)
    assert got.keys() == want.keys() and all(torch.equal(got[n], want[n]) for n in want)
    assert not any(t.is_meta for t in got.values()) and not loaded.training
    shared = [(a, b) for a in want for b in want if a < b and want[a] is want[b]]
    assert all(got[a] is got[b] for a, b in shared)
    if name in {m.name for m in TEXT_MODELS}:
        assert shared  # tied embeddings stay one tensor
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []


def test_a_model_whose_skeleton_cannot_take_them_is_built_in_full():
    class Plain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(3, 3)
            self.scale = torch.randn(3)  # neither a parameter nor a buffer: the file cannot hold it

    class Entry:
        random_weights_reusable = True
        name = "plain"

        def build(self, weights_, size):
            return Plain().eval()

    case = Case("plain", 1, Variant("eager"), device="cpu", model_size="tiny")
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        loaded = weights.reusing(Entry(), case, folder, lambda p: None).build("random", "tiny")
    expected = seeded(Entry())
    assert torch.equal(loaded.scale, expected.scale) and torch.equal(loaded.linear.weight, expected.linear.weight)


def test_only_random_weights_of_a_config_built_model_in_a_run_with_a_folder_are_reused(tmp_path):
    entry = zoo.get("resnet-50")
    case = Case("resnet-50", 1, Variant("eager"), device="cpu", model_size="tiny")
    assert weights.reusing(entry, case, None, None) is entry  # no folder: the Python API's inline models
    pretrained = Case("resnet-50", 1, Variant("eager"), device="cpu", model_size="tiny", weights="pretrained")
    assert weights.reusing(entry, pretrained, str(tmp_path), None) is entry
    factory = zoo.get("fault-ok")  # your code's model draws its own
    assert weights.reusing(factory, Case("fault-ok", 1, Variant("eager")), str(tmp_path), None) is factory
    assert os.listdir(tmp_path) == []
