"""A zoo entry: how to build one model (offline from a config in code, or from_pretrained) and its inputs.
transformers is imported only when a model is built, so listing the zoo stays cheap."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class ModelEntry:
    """What the worker needs of any model. Plugins subclass this; the guide's models are HFModel."""

    name: str  # short name on the command line: "resnet-50"
    label: str  # the guide's row label: "Image Classification/ResNet"
    task: str  # "image-classification", ...
    checkpoint: str  # where the weights come from (a hub id for the guide's models)

    def build(self, weights: str, size: str):
        """The model in eval mode on the CPU in float32; the worker moves and casts it."""
        raise NotImplementedError

    def inputs(self, image, batch_size: int, weights: str, size: str) -> dict:
        """Keyword arguments of one forward, as CPU tensors."""
        raise NotImplementedError


@dataclass(frozen=True)
class HFModel(ModelEntry):
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
        processor = self.processor(weights, size)
        return dict(processor(images=[image] * batch_size, return_tensors="pt"))
