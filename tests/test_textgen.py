"""The text-generation zoo: each checkpoint's exact architecture (meta-device builds), its prompt, tiny configs
that generate, and a causal-LM checkpoint given by path."""

import pytest
import torch
from conftest import stored

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


GEN_ARGS = ["--model", "smollm2-135m", "--tiny", "--variant", "eager", "default", "--new-tokens", "8", "--prompt-len",
            "16", "--iters", "3", "--first-calls", "2", "--repeats", "2", "--device", "cpu", "--quiet"]


def check_generation_run(code, out, err, db):
    assert code == 0, err
    eager, compiled = stored(db)
    for r in (eager, compiled):
        assert r["status"] == "ok" and r["case"]["new_tokens"] == 8 and r["case"]["prompt_len"] == 16
        assert r["generation"]["ttft"]["repeats"] == 2 and r["generation"]["per_token"]["mean"] > 0
        for rep in r["repeats"]:
            assert len(rep["generation"]["ttft_ms"]) == 3 and len(rep["generation"]["first_calls"]) == 2
    assert eager["graphs"] == 0 and compiled["graphs"] >= 1  # the eager baseline compiles nothing; compiled does
    assert compiled["agreement"] == {"tokens": 1.0}
    assert "prompt: 16 tokens, 8 new tokens)" in out and "TTFT ms" in out and "tokens/s" in out


@pytest.mark.slow  # a real compile, export or import: seconds on 2 cores
def test_the_issues_generation_command_stores_ttft_per_token_and_tokens_per_second(main_here, tmp_path):
    check_generation_run(*main_here("run", *GEN_ARGS, "--backend", "eager", "--db", "r.db", "--format", "csv"),
                         tmp_path / "r.db")
    import pandas as pd

    frame = pd.read_csv(tmp_path / "report" / "results.csv")
    assert frame.decode_tokens_per_s.notna().all() and frame.e2e_tokens_per_s.notna().all()


@pytest.mark.slow
def test_the_issues_generation_command_with_inductor(cli, tmp_path):
    p = cli("run", *GEN_ARGS, "--db", "r.db", "--format", "md")
    check_generation_run(p.returncode, p.stdout, p.stderr, tmp_path / "r.db")


@pytest.fixture(scope="module")
def pretrained_lm(tmp_path_factory):
    """A tiny causal LM with a tokenizer of its own (a word-level one over the shipped text), saved as a hub
    checkpoint would be."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from compilebench.zoo.textgen import prompt_text

    words = sorted(set(prompt_text().split()))
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(words)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    path = tmp_path_factory.mktemp("lm") / "word-lm"
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(path)
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                 num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                                 eos_token_id=0, bos_token_id=0)).save_pretrained(path)
    return path, len(prompt_text().split())  # the text's length in this tokenizer's tokens


def test_pretrained_weights_generate_from_the_shipped_text_through_the_checkpoints_tokenizer(cli, tmp_path, pretrained_lm):
    path, tokens = pretrained_lm
    entry = zoo.get(str(path))
    ids = entry.prompt(2, tokens + 50, "pretrained", "full")  # longer than the text: it repeats
    assert ids.shape == (2, tokens + 50) and torch.equal(ids[0, :50], ids[0, tokens:tokens + 50])
    p = cli("run", "--model", path, "--weights", "pretrained", "--variant", "eager", "--new-tokens", "4", "--prompt-len",
            "24", "--iters", "2", "--first-calls", "1", "--repeats", "1", "--device", "cpu", "--isolation", "inline",
            "--db", "r.db", "--format", "csv", "--quiet")
    assert p.returncode == 0, p.stderr
    (r,) = stored(tmp_path / "r.db")
    assert r["status"] == "ok" and r["label"] == "Text Generation/word-lm" and r["case"]["weights"] == "pretrained"


@pytest.mark.parametrize("name", ["smollm2-135m", "gpt2"])
def test_a_compiled_forward_gets_a_static_cache_made_and_marked_outside_it_and_reset_between_calls(name):
    # CUDA-graph trees record a graph only when the cache tensors it mutates are static addresses; transformers marks
    # them only when they are allocated outside a compiled region. So: allocated before the first compiled call,
    # marked, the same tensors in every call, emptied in place before each generate(). The forward below stands in
    # for the compiled one and records what it is handed.
    from compilebench.measure import generation

    entry = zoo.get(name)
    model = entry.build("random", "tiny").eval()
    prompt = entry.prompt(2, 8, "random", "tiny")
    cache = generation.static_cache(model, batch_size=2, max_len=8 + 4, dtype=torch.float32)
    assert all(getattr(layer.keys, "_dynamo_static_input_type", None) for layer in cache.layers)  # marked, now
    addresses = [layer.keys.data_ptr() for layer in cache.layers]
    seen, own = [], model.forward

    def forward(*args, **kwargs):
        given = kwargs[generation.cache_argument(model)]  # past_key_values, or cache from transformers 5.24
        seen.append((given is cache, int(given.get_seq_length()), [layer.keys.data_ptr() for layer in given.layers]))
        return own(*args, **kwargs)

    config = generation.generation_config(model, 4, None)
    call = generation._caller(model, prompt, config, forward, cache)
    with torch.inference_mode():
        first = call(lambda: None)
        second = call(lambda: None)
        eager = generation._caller(model, prompt, config, None)(lambda: None)  # the dynamic cache: the reference
    assert len(seen) == 8 and all(same for same, _, _ in seen)  # 4 forwards a call: prefill and 3 decode steps
    assert [length for _, length, _ in seen] == [0, 8, 9, 10] * 2  # emptied before each call, never replaced
    assert all(ptrs == addresses for _, _, ptrs in seen)
    assert torch.equal(first, second) and torch.equal(first, eager)
