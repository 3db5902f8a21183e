"""Causal LMs measured as people deploy them: generate() with a prompt. Each offline config mirrors its
checkpoint's config.json (tests/test_textgen.py checks the parameter counts); tiny configs keep the architecture.

Offline, the prompt is a fixed, seeded sequence of token ids; with pretrained weights it is the shipped text
(the opening of Alice's Adventures in Wonderland, public domain) through the checkpoint's own tokenizer, cut to
the prompt length (the text repeats where a prompt is longer)."""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from typing import Any, Callable

from compilebench.zoo.entry import Checkpointed, ModelEntry

TEXT_GENERATION = "text-generation"
DEFAULT_PROMPT_LEN = 128
PROMPT_SEED = 0


def prompt_text() -> str:
    return (importlib.resources.files("compilebench") / "data" / "prompt.txt").read_text(encoding="utf-8")


@dataclass(frozen=True)
class TextGenerationEntry(ModelEntry):
    """What the generation unit needs of a causal LM: the model, and a prompt of token ids."""

    kind = "generation"
    default_prompt_len: int = DEFAULT_PROMPT_LEN

    def prompt(self, batch_size: int, prompt_len: int, weights: str, size: str):
        """input_ids [batch_size, prompt_len]: the same prompt repeated batch_size times."""
        raise NotImplementedError


def seeded_prompt(vocab_size: int, batch_size: int, prompt_len: int):
    import torch

    ids = torch.randint(0, vocab_size, (1, prompt_len), generator=torch.Generator().manual_seed(PROMPT_SEED))
    return ids.repeat(batch_size, 1)


def tokenized_prompt(checkpoint: str, batch_size: int, prompt_len: int):
    """The shipped text through the checkpoint's tokenizer, repeated until it is long enough, cut to prompt_len."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)
    ids = tokenizer(prompt_text(), return_tensors="pt")["input_ids"][0]
    whole = ids.repeat(-(-prompt_len // ids.numel()))[:prompt_len]
    return whole.unsqueeze(0).repeat(batch_size, 1)


@dataclass(frozen=True)
class CausalLM(Checkpointed, TextGenerationEntry):
    model_class: str = ""  # transformers class name
    config: Callable[[], Any] | None = None  # full-size config, mirroring the checkpoint's config.json
    tiny_config: Callable[[], Any] | None = None

    def build(self, weights: str, size: str):
        import transformers

        cls = getattr(transformers, self.model_class)
        if weights == "pretrained":
            return cls.from_pretrained(self.checkpoint).eval()
        return cls(self.tiny_config() if size == "tiny" else self.config()).eval()

    def prompt(self, batch_size: int, prompt_len: int, weights: str, size: str):
        if weights == "pretrained":
            return tokenized_prompt(self.checkpoint, batch_size, prompt_len)
        vocab = (self.tiny_config() if size == "tiny" else self.config()).vocab_size
        return seeded_prompt(vocab, batch_size, prompt_len)


def _gemma_2b():
    from transformers import GemmaConfig

    return GemmaConfig(
        vocab_size=256000, hidden_size=2048, intermediate_size=16384, num_hidden_layers=18, num_attention_heads=8,
        num_key_value_heads=1, head_dim=256, hidden_act="gelu", hidden_activation="gelu_pytorch_tanh",
        max_position_embeddings=8192, rms_norm_eps=1e-6, rope_theta=10000.0, attention_bias=False,
        bos_token_id=2, eos_token_id=1, pad_token_id=0, tie_word_embeddings=True,
    )


def _gemma_tiny():
    from transformers import GemmaConfig

    return GemmaConfig(vocab_size=512, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                       num_key_value_heads=1, head_dim=16, hidden_activation="gelu_pytorch_tanh",
                       max_position_embeddings=512, bos_token_id=2, eos_token_id=1, pad_token_id=0)


def _llama_3_2_1b():
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
        num_key_value_heads=8, head_dim=64, hidden_act="silu", max_position_embeddings=131072, rms_norm_eps=1e-5,
        rope_theta=500000.0, rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                           "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
        attention_bias=False, mlp_bias=False, bos_token_id=128000, eos_token_id=128001, tie_word_embeddings=True,
    )


def _qwen2_5_0_5b():
    from transformers import Qwen2Config

    return Qwen2Config(
        vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
        num_key_value_heads=2, hidden_act="silu", max_position_embeddings=32768, rms_norm_eps=1e-6,
        rope_theta=1000000.0, use_sliding_window=False, sliding_window=None, max_window_layers=24,
        bos_token_id=151643, eos_token_id=151643, tie_word_embeddings=True,
    )


def _qwen_tiny():
    from transformers import Qwen2Config

    return Qwen2Config(vocab_size=512, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                       num_key_value_heads=1, max_position_embeddings=512, use_sliding_window=False, sliding_window=None,
                       max_window_layers=2, bos_token_id=0, eos_token_id=0, tie_word_embeddings=True)


def _smollm2_135m():
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
        num_key_value_heads=3, head_dim=64, hidden_act="silu", max_position_embeddings=8192, rms_norm_eps=1e-5,
        rope_theta=100000.0, attention_bias=False, mlp_bias=False, initializer_range=0.041666666666666664,
        bos_token_id=0, eos_token_id=0, tie_word_embeddings=True,
    )


def _llama_tiny():
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=512, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                       num_key_value_heads=1, head_dim=16, max_position_embeddings=512, bos_token_id=0, eos_token_id=0,
                       tie_word_embeddings=True)


def _gpt2():
    from transformers import GPT2Config

    return GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12, activation_function="gelu_new",
                      layer_norm_epsilon=1e-5, bos_token_id=50256, eos_token_id=50256, tie_word_embeddings=True)


def _gpt2_tiny():
    from transformers import GPT2Config

    return GPT2Config(vocab_size=512, n_positions=512, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)


def _entry(name, label, checkpoint, model_class, config, tiny):
    return CausalLM(name=name, label=f"Text Generation/{label}", task=TEXT_GENERATION, checkpoint=checkpoint,
                    model_class=model_class, config=config, tiny_config=tiny)


MODELS = [
    _entry("gemma-2b", "Gemma-2B", "google/gemma-2b", "GemmaForCausalLM", _gemma_2b, _gemma_tiny),
    _entry("llama-3.2-1b", "Llama-3.2-1B", "meta-llama/Llama-3.2-1B", "LlamaForCausalLM", _llama_3_2_1b, _llama_tiny),
    _entry("qwen2.5-0.5b", "Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B", "Qwen2ForCausalLM", _qwen2_5_0_5b, _qwen_tiny),
    _entry("smollm2-135m", "SmolLM2-135M", "HuggingFaceTB/SmolLM2-135M", "LlamaForCausalLM", _smollm2_135m, _llama_tiny),
    _entry("gpt2", "GPT-2", "openai-community/gpt2", "GPT2LMHeadModel", _gpt2, _gpt2_tiny),
]
