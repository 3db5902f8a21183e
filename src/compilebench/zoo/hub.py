"""Any hub id or local checkpoint directory as a zoo entry, its task read from its config (or given)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from compilebench.core.errors import UnknownChoice, UserError
from compilebench.zoo.entry import GUIDE_QUERIES, Checkpointed, ModelEntry, batch_of_copies
from compilebench.zoo.textgen import TEXT_GENERATION, TextGenerationEntry, seeded_prompt, tokenized_prompt

# task -> (transformers auto class, its *_MAPPING_NAMES table, the guide's task word for row labels)
TASKS = {
    "image-classification": ("AutoModelForImageClassification", "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES", "Image Classification"),
    "object-detection": ("AutoModelForObjectDetection", "MODEL_FOR_OBJECT_DETECTION_MAPPING_NAMES", "Object Detection"),
    "zero-shot-object-detection": ("AutoModelForZeroShotObjectDetection", "MODEL_FOR_ZERO_SHOT_OBJECT_DETECTION_MAPPING_NAMES", "Object Detection"),
    "semantic-segmentation": ("AutoModelForSemanticSegmentation", "MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES", "Image Segmentation"),
    "universal-segmentation": ("AutoModelForUniversalSegmentation", "MODEL_FOR_UNIVERSAL_SEGMENTATION_MAPPING_NAMES", "Image Segmentation"),
    TEXT_GENERATION: ("AutoModelForCausalLM", "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "Text Generation"),
}


def looks_like_checkpoint(name: str) -> bool:
    """A local directory, or a hub id ('org/name')."""
    return os.path.isdir(name) or (name.count("/") == 1 and not name.startswith(("/", ".")))


def _names(value) -> tuple[str, ...]:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def detect_task(config) -> str:
    """The task whose auto class builds this config's architecture."""
    from transformers.models.auto import modeling_auto

    arch = (getattr(config, "architectures", None) or [None])[0]
    candidates = []
    for task, (_, table, _) in TASKS.items():
        names = _names(getattr(modeling_auto, table).get(config.model_type, ()))
        if arch is not None and arch in names:
            return task
        if names:
            candidates.append(task)
    if arch is None and len(candidates) == 1:
        return candidates[0]
    if arch is None and candidates:
        raise UserError(f"cannot tell the task of {config.model_type!r}: say it with --task (one of {', '.join(candidates)})")
    hint = f"; its model type also has {', '.join(candidates)} classes: give --task to build one of those" if candidates else ""
    raise UserError(f"{arch or config.model_type!r} is not a model compilebench measures (supported tasks: "
                    f"{', '.join(TASKS)}){hint}")


@dataclass(frozen=True)
class HubModel(Checkpointed, ModelEntry):
    """A checkpoint named on the command line. --weights random builds its architecture from its config."""

    def _auto(self):
        import transformers

        return getattr(transformers, TASKS[self.task][0])

    def build(self, weights: str, size: str):
        if weights == "pretrained":
            return self._auto().from_pretrained(self.checkpoint).eval()
        import transformers

        return self._auto().from_config(transformers.AutoConfig.from_pretrained(self.checkpoint)).eval()

    def inputs(self, image, batch_size: int, weights: str, size: str) -> dict:
        import transformers

        if self.task == "zero-shot-object-detection":
            processor = transformers.AutoProcessor.from_pretrained(self.checkpoint)
            return batch_of_copies(processor, batch_size, text=[GUIDE_QUERIES], images=[image])
        processor = transformers.AutoImageProcessor.from_pretrained(self.checkpoint)
        return batch_of_copies(processor, batch_size, images=[image])


@dataclass(frozen=True)
class HubCausalLM(Checkpointed, TextGenerationEntry):
    """A causal LM checkpoint named on the command line, measured by generation."""

    def build(self, weights: str, size: str):
        import transformers

        auto = transformers.AutoModelForCausalLM
        if weights == "pretrained":
            return auto.from_pretrained(self.checkpoint).eval()
        return auto.from_config(transformers.AutoConfig.from_pretrained(self.checkpoint)).eval()

    def prompt(self, batch_size: int, prompt_len: int, weights: str, size: str):
        if weights == "pretrained":
            return tokenized_prompt(self.checkpoint, batch_size, prompt_len)
        import transformers

        return seeded_prompt(transformers.AutoConfig.from_pretrained(self.checkpoint).vocab_size, batch_size, prompt_len)


def check_available(checkpoint: str) -> None:
    """--weights pretrained needs the checkpoint: a local directory, the local hub cache, or the hub itself. Asked
    once, before anything runs, so a missing one is one line rather than an error in every case."""
    if os.path.isdir(checkpoint):
        return
    import transformers

    try:
        transformers.AutoConfig.from_pretrained(checkpoint)
    except (OSError, ValueError) as exc:
        raise UserError(f"--weights pretrained: cannot load {checkpoint!r}: no local copy and the hub cannot be reached "
                        f"({str(exc).splitlines()[0][:200]}); download it first (`huggingface-cli download "
                        f"{checkpoint}`) or give a local directory with --model") from None


def resolve(name: str, task: str | None) -> ModelEntry:
    """The entry for a checkpoint; reading its config is the only I/O (the hub, unless it is a directory)."""
    import transformers

    if task is not None and task not in TASKS:
        raise UnknownChoice("task", task, list(TASKS))
    try:
        config = transformers.AutoConfig.from_pretrained(name)
    except (OSError, ValueError) as exc:
        where = "directory" if os.path.isdir(name) else "hub id (offline? use a local directory)"
        raise UserError(f"cannot read a model config from {where} {name!r}: {str(exc).splitlines()[0]}") from None
    task = task or detect_task(config)
    label = f"{TASKS[task][2]}/{os.path.basename(os.path.normpath(name))}"
    cls = HubCausalLM if task == TEXT_GENERATION else HubModel
    return cls(name=name, label=label, task=task, checkpoint=name)
