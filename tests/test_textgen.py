"""The text-generation zoo: each checkpoint's exact architecture (meta-device builds), its prompt, tiny configs
that generate, and a causal-LM checkpoint given by path."""

import pytest
import torch

from compilebench import zoo
from compilebench.zoo import hub

# Published parameter counts (each model card; the checkpoints' safetensors metadata).
PUBLISHED_PARAMS = {
    "gemma-2b": 2.51e9,  # google/gemma-2b: 2.51B
    "llama-3.2-1b": 1.24e9,  # meta-llama/Llama-3.2-1B: 1.24B
    "qwen2.5-0.5b": 0.49e9,  # Qwen/Qwen2.5-0.5B: "Number of Parameters: 0.49B"
    "smollm2-135m": 135e6,  # HuggingFaceTB/SmolLM2-135M: 135M
    "gpt2": 124e6,  # openai-community/gpt2: 124M
}


@pytest.mark.parametrize("name", list(PUBLISHED_PARAMS))
def test_full_size_architecture_has_the_published_parameter_count(name):
    entry = zoo.get(name)
    assert entry.task == "text-generation" and entry.label.startswith("Text Generation/")
    with torch.device("meta"):
        model = entry.build("random", "full")
    params = sum(p.numel() for p in model.parameters())  # tied embeddings count once, as published
    assert abs(params - PUBLISHED_PARAMS[name]) / PUBLISHED_PARAMS[name] < 0.01, params


def test_the_offline_prompt_is_fixed_and_repeated_per_sequence():
    entry = zoo.get("gpt2")
    a = entry.prompt(3, 16, "random", "full")
    b = entry.prompt(3, 16, "random", "full")
    assert a.shape == (3, 16) and torch.equal(a, b) and torch.equal(a[0], a[2])
    assert int(a.max()) < 50257 and entry.default_prompt_len == 128


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny causal LM saved as a hub checkpoint would be."""
    path = tmp_path_factory.mktemp("ckpt") / "my-lm"
    entry = zoo.get("smollm2-135m")
    entry.build("random", "tiny").save_pretrained(path)
    return path


def test_a_causal_lm_checkpoint_directory_is_measured_by_generation(checkpoint):
    entry = zoo.get(str(checkpoint))
    assert isinstance(entry, hub.HubCausalLM) and entry.task == "text-generation"
    assert entry.label == "Text Generation/my-lm"
    ids = entry.prompt(2, 12, "random", "full")
    assert ids.shape == (2, 12)


def test_models_lists_the_causal_lms_with_their_parameters_and_prompt(cli):
    p = cli("models")
    assert p.returncode == 0, p.stderr
    assert "gemma-2b" in p.stdout and "2.51B" in p.stdout and "prompt 128 tokens" in p.stdout
    assert "smollm2-135m" in p.stdout and "134.52M" in p.stdout
