"""Text-to-image pipelines, built offline: Stable Diffusion 1.5 (a UNet, 50 steps with guidance), SDXL-Turbo (a
larger UNet, one step) and FLUX.1-schnell (a DiT, 4 steps). Each denoiser and decoder is built from its checkpoint's
config.json written here (random weights; a tiny config of the same architecture for tests), or loaded from the
checkpoint with --weights pretrained. No tokenizer or text encoder can be had offline: the text encoders' outputs
are handed in as prompt embeddings of their real shapes (random), which the label says.

A run times one image end to end (every step, the guidance, the decoder) as the case's call: latents of the image's
size in, the image out. `compilebench shapes --image-size` makes images of other sizes. diffusers is imported only
when a pipeline is built (pip install compilebench[diffusion])."""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import Callable

from compilebench.core.errors import UserError
from compilebench.zoo.entry import ModelEntry

TASK = "text-to-image"
EXTRA = "diffusion"


def _diffusers():
    try:
        import diffusers
    except ImportError:
        raise UserError(f"text-to-image pipelines need diffusers: pip install compilebench[{EXTRA}]") from None
    return diffusers


@dataclass(frozen=True)
class Embeds:
    """The text encoders' outputs a pipeline takes: (tokens, width) of the prompt's, and the pooled width."""

    tokens: int
    width: int
    pooled: int | None = None  # SDXL's and Flux's pooled CLIP embedding
    negative: bool = False  # classifier-free guidance: the negative prompt's too


@dataclass(frozen=True)
class PipelineEntry(ModelEntry):
    """A diffusers pipeline: its class, its denoiser's (a UNet or a transformer) and decoder's configs, its
    scheduler, the embeddings it takes, its steps, guidance and native resolution."""

    kind = "image"
    draws_on_device = True
    pipeline_class: str = ""
    denoiser_class: str = ""
    denoiser_name: str = "unet"  # the pipeline's attribute: unet, transformer
    denoiser: Callable[[], dict] = dict  # full-size config, as the checkpoint's config.json
    tiny_denoiser: Callable[[], dict] = dict
    vae: Callable[[], dict] = dict
    tiny_vae: Callable[[], dict] = dict
    scheduler_class: str = ""
    scheduler: dict = field(default_factory=dict)
    embeds: Embeds = Embeds(77, 768)
    tiny_embeds: Embeds = Embeds(8, 32)
    steps: int = 50
    guidance: float = 7.5
    resolution: int = 512  # the image's side where a run names no size
    tiny_resolution: int = 16
    packed: bool = False  # latents handed to the denoiser as 2x2 patches (Flux)

    @property
    def default_steps(self) -> int:
        return self.steps

    @property
    def pretrained_from(self) -> str:
        return self.checkpoint

    def build(self, weights: str, size: str):
        import torch

        d = _diffusers()
        cls = getattr(d, self.denoiser_class)
        if weights == "pretrained":
            denoiser = cls.from_pretrained(self.checkpoint, subfolder=self.denoiser_name)
            vae = d.AutoencoderKL.from_pretrained(self.checkpoint, subfolder="vae")
            scheduler = getattr(d, self.scheduler_class).from_pretrained(self.checkpoint, subfolder="scheduler")
        else:
            torch.manual_seed(0)  # the same weights in every process
            tiny = size == "tiny"
            denoiser = cls(**(self.tiny_denoiser() if tiny else self.denoiser()))
            vae = d.AutoencoderKL(**(self.tiny_vae() if tiny else self.vae()))
            # a scheduler's tables are numpy's, even where the models build on the meta device
            with torch.device("cpu") if torch.get_default_device().type != "cpu" else contextlib.nullcontext():
                scheduler = getattr(d, self.scheduler_class)(**self.scheduler)
        pipe = getattr(d, self.pipeline_class)(**{self.denoiser_name: denoiser, "vae": vae, "scheduler": scheduler},
                                               **_no_text_encoders(getattr(d, self.pipeline_class)))
        return self.module(pipe, self.denoiser_name, self.steps, self.guidance, self.packed).eval()

    @property
    def module(self):
        """The module a case times: the whole pipeline, one image a call."""
        from compilebench.zoo.diffusion import Pipeline

        return Pipeline

    def inputs(self, image, batch_size: int, weights: str, size: str) -> dict:
        return self.sized_inputs(image, None, batch_size, weights, size)

    def _decoder(self, size: str) -> tuple[dict, int]:
        """The decoder's config and its upsampling (pixels per latent) at this size."""
        vae = self.tiny_vae() if size == "tiny" else self.vae()
        return vae, 2 ** (len(vae["block_out_channels"]) - 1)

    def check_size(self, image_size: tuple[int, int], size: str) -> None:
        """An image's sides must be multiples of the decoder's scale (Flux's twice that: its latents in 2x2
        patches)."""
        multiple = self._decoder(size)[1] * (2 if self.packed else 1)
        width, height = image_size
        if width % multiple or height % multiple:
            raise UserError(f"--resolution {width}x{height}: {self.name} makes images whose sides are multiples of "
                            f"{multiple}{' (its tiny config)' if size == 'tiny' else ''}")

    def sized_inputs(self, image, image_size, batch_size: int, weights: str, size: str) -> dict:
        """Starting latents for an image of image_size (None: the pipeline's own resolution) and the prompt's
        embeddings, batch_size prompts of one image each; the photo is not used. Drawn from fixed seeds."""
        import torch

        tiny = size == "tiny"
        side = self.tiny_resolution if tiny else self.resolution
        width, height = image_size or (side, side)
        self.check_size((width, height), size)
        vae, scale = self._decoder(size)
        e = self.tiny_embeds if tiny else self.embeds
        gen = torch.Generator().manual_seed(0)
        out = {"latents": torch.randn(batch_size, vae["latent_channels"], height // scale, width // scale, generator=gen),
               "prompt_embeds": torch.randn(batch_size, e.tokens, e.width, generator=gen)}
        if e.pooled:
            out["pooled_prompt_embeds"] = torch.randn(batch_size, e.pooled, generator=gen)
        if e.negative:
            out["negative_prompt_embeds"] = torch.randn(batch_size, e.tokens, e.width, generator=gen)
            if e.pooled:
                out["negative_pooled_prompt_embeds"] = torch.randn(batch_size, e.pooled, generator=gen)
        return out


@dataclass(frozen=True)
class DenoiserStep(PipelineEntry):
    """One denoiser step of a pipeline alone, as diffusers' own benchmarks time it: a forward pass whose inputs are
    the pipeline's at its first step (zoo/diffusion.Step)."""

    kind = "vision"

    @property
    def default_steps(self) -> None:
        return None

    @property
    def module(self):
        from compilebench.zoo.diffusion import Step

        return Step

    @classmethod
    def of(cls, pipeline: PipelineEntry) -> DenoiserStep:
        fields = {f.name: getattr(pipeline, f.name) for f in dataclasses.fields(pipeline)}
        task_name, _, rest = pipeline.label.partition("/")
        name, _, said = rest.partition(" (")
        return cls(**{**fields, "name": f"{pipeline.name}-step", "label": f"{task_name}/{name}, one step ({said}"})


def _no_text_encoders(cls) -> dict:
    """The pipeline's other components, as None: its tokenizers, text encoders, safety checker."""
    import inspect

    taken = ("unet", "transformer", "vae", "scheduler", "self")
    out = {n: None for n, p in inspect.signature(cls.__init__).parameters.items()
           if n not in taken and p.kind is p.POSITIONAL_OR_KEYWORD}
    if "requires_safety_checker" in out:
        out["requires_safety_checker"] = False
    return out


def _sd_vae(**changes) -> dict:
    return {**dict(block_out_channels=(128, 256, 512, 512), down_block_types=("DownEncoderBlock2D",) * 4,
                   up_block_types=("UpDecoderBlock2D",) * 4, latent_channels=4, layers_per_block=2, norm_num_groups=32,
                   sample_size=512), **changes}


def _tiny_vae(**changes) -> dict:
    return {**dict(block_out_channels=(16, 32), down_block_types=("DownEncoderBlock2D",) * 2,
                   up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4, layers_per_block=1, norm_num_groups=8),
            **changes}


_SD_BETAS = dict(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", num_train_timesteps=1000)

PIPELINES = [
    PipelineEntry(
        "sd-1.5", "Text-to-Image/Stable Diffusion 1.5 (prompt embeddings)", TASK,
        "stable-diffusion-v1-5/stable-diffusion-v1-5",
        pipeline_class="StableDiffusionPipeline", denoiser_class="UNet2DConditionModel",
        denoiser=lambda: dict(sample_size=64, block_out_channels=(320, 640, 1280, 1280), layers_per_block=2,
                              down_block_types=("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
                              up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3,
                              cross_attention_dim=768, attention_head_dim=8),
        tiny_denoiser=lambda: dict(sample_size=8, block_out_channels=(32, 64), layers_per_block=1,
                                   down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                   up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
                                   attention_head_dim=4, norm_num_groups=8),
        vae=lambda: _sd_vae(), tiny_vae=lambda: _tiny_vae(),
        scheduler_class="PNDMScheduler",
        scheduler=dict(**_SD_BETAS, set_alpha_to_one=False, skip_prk_steps=True, steps_offset=1),
        embeds=Embeds(77, 768, negative=True), tiny_embeds=Embeds(8, 32, negative=True),
        steps=50, guidance=7.5, resolution=512),
    PipelineEntry(
        "sdxl-turbo", "Text-to-Image/SDXL-Turbo (prompt embeddings)", TASK, "stabilityai/sdxl-turbo",
        pipeline_class="StableDiffusionXLPipeline", denoiser_class="UNet2DConditionModel",
        denoiser=lambda: dict(sample_size=64, block_out_channels=(320, 640, 1280), layers_per_block=2,
                              down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
                              up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
                              transformer_layers_per_block=(1, 2, 10), attention_head_dim=(5, 10, 20),
                              cross_attention_dim=2048, use_linear_projection=True, addition_embed_type="text_time",
                              addition_time_embed_dim=256, projection_class_embeddings_input_dim=2816),
        tiny_denoiser=lambda: dict(sample_size=8, block_out_channels=(32, 64), layers_per_block=1,
                                   down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                   up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), transformer_layers_per_block=(1, 2),
                                   attention_head_dim=(2, 4), cross_attention_dim=32, norm_num_groups=8,
                                   use_linear_projection=True, addition_embed_type="text_time",
                                   addition_time_embed_dim=8, projection_class_embeddings_input_dim=16 + 6 * 8),
        vae=lambda: _sd_vae(scaling_factor=0.13025, force_upcast=True), tiny_vae=lambda: _tiny_vae(force_upcast=True),
        scheduler_class="EulerAncestralDiscreteScheduler",
        scheduler=dict(**_SD_BETAS, steps_offset=1, timestep_spacing="trailing"),
        embeds=Embeds(77, 2048, pooled=1280), tiny_embeds=Embeds(8, 32, pooled=16),
        steps=1, guidance=0.0, resolution=512),
    PipelineEntry(
        "flux-schnell", "Text-to-Image/FLUX.1-schnell (prompt embeddings)", TASK, "black-forest-labs/FLUX.1-schnell",
        pipeline_class="FluxPipeline", denoiser_class="FluxTransformer2DModel", denoiser_name="transformer",
        denoiser=lambda: dict(patch_size=1, in_channels=64, num_layers=19, num_single_layers=38, attention_head_dim=128,
                              num_attention_heads=24, joint_attention_dim=4096, pooled_projection_dim=768,
                              guidance_embeds=False, axes_dims_rope=(16, 56, 56)),
        tiny_denoiser=lambda: dict(patch_size=1, in_channels=16, num_layers=1, num_single_layers=1, attention_head_dim=8,
                                   num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=16,
                                   guidance_embeds=False, axes_dims_rope=(2, 2, 4)),
        vae=lambda: _sd_vae(latent_channels=16, scaling_factor=0.3611, shift_factor=0.1159, use_quant_conv=False,
                            use_post_quant_conv=False, force_upcast=True, sample_size=1024),
        tiny_vae=lambda: _tiny_vae(scaling_factor=0.3611, shift_factor=0.1159, use_quant_conv=False,
                                   use_post_quant_conv=False),
        scheduler_class="FlowMatchEulerDiscreteScheduler",
        scheduler=dict(num_train_timesteps=1000, shift=1.0, use_dynamic_shifting=False),
        embeds=Embeds(256, 4096, pooled=768), tiny_embeds=Embeds(8, 32, pooled=16),
        steps=4, guidance=0.0, resolution=1024, packed=True),
]
# each pipeline's denoiser step alone, after the pipelines
PIPELINES += [DenoiserStep.of(p) for p in PIPELINES]
