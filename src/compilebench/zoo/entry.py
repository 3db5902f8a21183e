"""A zoo entry: how to build one model (offline from a config in code, or from_pretrained) and its inputs.
transformers is imported only when a model is built, so listing the zoo stays cheap."""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass, field
from typing import Any, Callable


def default_image_path() -> str:
    return str(importlib.resources.files("compilebench") / "data" / "chelsea-640x480.jpg")


def load_image(path: str):
    from PIL import Image

    with Image.open(path) as im:
        return im.convert("RGB")


def batch_of_copies(processor, batch_size: int, **one) -> dict:
    """What `processor` gives for a batch of batch_size copies of one input (`one`: its arguments for a batch of one,
    each a list of one item), made by tiling its output for one copy along the first dimension: for identical items
    that is the processor's own batch (tests/test_zoo.py checks it for every zoo model), and a batch of 60,000
    photos preprocessed one by one took minutes where tiling takes a copy's time. An output that is not all tensors
    is the processor's own batch."""
    import torch

    out = dict(processor(**one, return_tensors="pt"))
    if batch_size == 1:
        return out
    if not all(isinstance(v, torch.Tensor) and v.dim() for v in out.values()):
        return dict(processor(**{k: v * batch_size for k, v in one.items()}, return_tensors="pt"))
    return {k: v.repeat(batch_size, *[1] * (v.dim() - 1)) for k, v in out.items()}


@dataclass(frozen=True)
class ModelEntry:
    """What the worker needs of any model. Plugins subclass this; the guide's models are HFModel."""

    name: str  # short name on the command line: "resnet-50"
    label: str  # the guide's row label: "Image Classification/ResNet"
    task: str  # "image-classification", ...
    checkpoint: str  # where the weights come from (a hub id for the guide's models)
    kind = "vision"  # what is timed (core/settings.KINDS): a forward pass, generate() or an image; asked only here
    default_prompt_len = None  # a text-generation model's prompt length where a run names none
    default_steps = None  # a text-to-image pipeline's denoiser steps where a run names none
    # Whether a run may draw its random weights once and load them in every process (measure/weights.py): a model
    # your code builds makes its own.
    random_weights_reusable = False
    # Whether each process draws its random weights on the case's device itself (a 12B-parameter pipeline drawn on a
    # CPU takes minutes, and saved once a run would fill a disk)
    draws_on_device = False

    def build(self, weights: str, size: str):
        """The model in eval mode on the CPU in float32; the worker moves and casts it."""
        raise NotImplementedError

    def inputs(self, image, batch_size: int, weights: str, size: str) -> dict:
        """Keyword arguments of one forward, as CPU tensors."""
        raise NotImplementedError

    def check_size(self, image_size: tuple[int, int], size: str) -> None:
        """Refuse (UserError) an image size this model cannot take; a photo of any size can be resized."""

    def sized_inputs(self, image, image_size: tuple[int, int] | None, batch_size: int, weights: str, size: str) -> dict:
        """The inputs of one call with the photo resized to image_size first (None: as it is), as a photo of that
        size would arrive. A pipeline makes an image of that size instead."""
        return self.inputs(image if image_size is None else image.resize(image_size), batch_size, weights, size)

    @property
    def pretrained_from(self) -> str | None:
        """The hub id or directory --weights pretrained loads (None: the entry has no such weights)."""
        return None

    @property
    def in_process_only(self) -> bool:
        """An object that cannot be handed to a fresh worker process (the Python API's nn.Module objects)."""
        return False


class Checkpointed:
    """A mixin for entries whose pretrained weights are their checkpoint's, and whose random weights transformers
    draws for the config's architecture."""

    random_weights_reusable = True

    @property
    def pretrained_from(self) -> str | None:
        return self.checkpoint


@dataclass(frozen=True)
class HFModel(Checkpointed, ModelEntry):
    """A transformers model; the offline build mirrors the checkpoint's config.json and preprocessor_config.json."""

    model_class: str  # transformers class name
    config: Callable[[], Any]  # full-size config, mirroring the checkpoint's config.json
    tiny_config: Callable[[], Any]  # same architecture, tiny widths: for tests and smoke runs
    processor_class: str  # transformers image processor class (a *Pil variant: no torchvision needed)
    processor_kwargs: dict = field(default_factory=dict)  # as the checkpoint's preprocessor_config.json
    tiny_processor_kwargs: dict = field(default_factory=dict)  # overrides so inputs fit the tiny config

    def build(self, weights: str, size: str):
        import transformers

        cls = getattr(transformers, self.model_class)
        if weights == "pretrained":
            model = cls.from_pretrained(self.checkpoint)
        else:
            config = self.tiny_config() if size == "tiny" else self.config()
            model = cls(config)
        return model.eval()

    def processor(self, weights: str, size: str):
        import transformers

        if weights == "pretrained":
            return transformers.AutoImageProcessor.from_pretrained(self.checkpoint)
        kwargs = {**self.processor_kwargs, **(self.tiny_processor_kwargs if size == "tiny" else {})}
        # transformers 4.x has no *Pil classes; its plain image processors are the PIL/numpy ones.
        cls = getattr(transformers, self.processor_class, None) or getattr(transformers, self.processor_class.removesuffix("Pil"))
        return cls(**kwargs)

    def inputs(self, image, batch_size: int, weights: str, size: str) -> dict:
        # The image repeated batch_size times, as the guide did.
        return batch_of_copies(self.processor(weights, size), batch_size, images=[image])


# The guide's two OWL-ViT queries. The CLIP tokenizer's vocabulary does not ship with transformers, so the
# offline build uses their token ids (MODELS.md), padded with 0 to OWL-ViT's 16 text positions.
GUIDE_QUERIES = ["a photo of a cat", "a photo of a dog"]
GUIDE_QUERY_IDS = [[49406, 320, 1125, 539, 320, 2368, 49407], [49406, 320, 1125, 539, 320, 1929, 49407]]
OWLVIT_TEXT_POSITIONS = 16


@dataclass(frozen=True)
class OwlViTModel(HFModel):
    """OWL-ViT takes text queries beside the image: the guide's two, for every image of the batch."""

    def inputs(self, image, batch_size: int, weights: str, size: str) -> dict:
        import torch
        import transformers

        if weights == "pretrained":
            processor = transformers.AutoProcessor.from_pretrained(self.checkpoint)
            return batch_of_copies(processor, batch_size, text=[GUIDE_QUERIES], images=[image])
        queries = GUIDE_QUERY_IDS * batch_size
        input_ids = torch.zeros(len(queries), OWLVIT_TEXT_POSITIONS, dtype=torch.long)
        attention_mask = torch.zeros_like(input_ids)
        for row, ids in enumerate(queries):
            input_ids[row, : len(ids)] = torch.tensor(ids)
            attention_mask[row, : len(ids)] = 1
        return {**super().inputs(image, batch_size, weights, size), "input_ids": input_ids, "attention_mask": attention_mask}
