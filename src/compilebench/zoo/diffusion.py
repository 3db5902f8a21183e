"""A text-to-image pipeline as one module to time: diffusers' own pipeline (its denoiser loop, guidance, scheduler
and decoder, as a user calls it) making one image per prompt from prompt embeddings and starting latents.

What torch.compile compiles (and --quantize quantizes) is its denoiser (`optimized_part`), as diffusers' docs do
it (`pipe.unet = torch.compile(pipe.unet)`, or its repeated blocks): measure/compiler.py swaps the compiled
denoiser in for each call (`part_replaced`), so an eager and a compiled variant can share one pipeline. Each call
returns the image and the last step's latents (before the decoder's clamp), which the correctness check compares
with eager's.

Imports torch and diffusers: only a worker building a pipeline imports this module."""

from __future__ import annotations

import contextlib
import inspect

import torch


# The attention projections most LoRA adapters train (diffusers' UNet and Flux blocks name them alike)
LORA_TARGETS = ("to_q", "to_k", "to_v", "to_out.0")


class Pipeline(torch.nn.Module):
    """`pipe` (a diffusers pipeline without text encoders) whose denoiser and decoder are this module's, so `.to()`
    moves and casts them; `steps` denoiser steps per image, `guidance` its classifier-free guidance scale."""

    def __init__(self, pipe, denoiser_name: str, steps: int, guidance: float, packed: bool = False):
        super().__init__()
        self.denoiser = getattr(pipe, denoiser_name)
        self.vae = pipe.vae
        self.pipe, self.denoiser_name, self.steps, self.guidance, self.packed = pipe, denoiser_name, steps, guidance, packed
        self.adapters, self.hotswap, self.loaded = {}, False, set()
        self.marks = None  # decoder_share: when each step ended
        pipe.set_progress_bar_config(disable=True)

    def prepare_lora(self, ranks, hotswap: bool) -> None:
        """LoRA adapters of these ranks on the denoiser's attention projections, made before anything is compiled
        (random: drawn from their rank as seed), as the files a user would have read; `hotswap`: swapped in place."""
        from peft import LoraConfig
        from peft.utils import get_peft_model_state_dict

        for rank in ranks:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(rank)
                self.denoiser.add_adapter(LoraConfig(r=rank, lora_alpha=rank, target_modules=list(LORA_TARGETS),
                                                     init_lora_weights=False), adapter_name="drawn")
            weights = get_peft_model_state_dict(self.denoiser, adapter_name="drawn")
            self.adapters[rank] = {f"{self.denoiser_name}.{k}": v.detach().clone() for k, v in weights.items()}
            self.denoiser.delete_adapters("drawn")
        self.hotswap = hotswap

    def swap_lora(self, rank: int) -> None:
        """The adapter of this rank made the one the denoiser runs, as a user swaps one in: hot-swapped into the
        first one's place (diffusers pads every adapter to the largest rank), or loaded once beside the others and
        set active."""
        if self.hotswap:
            if not self.loaded:
                self.pipe.enable_lora_hotswap(target_rank=max(self.adapters))
            self.pipe.load_lora_weights(self.adapters[rank], adapter_name="served", hotswap=bool(self.loaded))
            self.loaded.add("served")
            return
        name = f"rank{rank}"
        if name not in self.loaded:
            self.pipe.load_lora_weights(self.adapters[rank], adapter_name=name)
            self.loaded.add(name)
        self.pipe.set_adapters(name)

    def unload_lora(self) -> None:
        """The adapters loaded beside each other deleted (eager's reference loaded them), so the served pass loads
        each anew as a user's first swap does; hot-swapped ones stay in place, as hot-swap needs them from before
        the compile on."""
        if self.loaded and not self.hotswap:
            self.pipe.delete_adapters(sorted(self.loaded))
            self.loaded.clear()

    @property
    def optimized_part(self):
        """What torch.compile compiles and --quantize quantizes of this pipeline: its denoiser."""
        return self.denoiser

    @property
    def decoder(self):
        """What --compile-decoder compiles beside the denoiser: its VAE's decode, as diffusers' docs compile it."""
        return self.vae.decode

    @contextlib.contextmanager
    def part_replaced(self, fn, decoder=None):
        """The pipeline's calls inside the block call `fn` (the compiled denoiser) where they called the denoiser,
        and `decoder` (a compiled decode) where they decoded, if given; what they called before after it. Set in
        the instances' own dicts: the pipeline's __setattr__ would register `fn` as a component in its config."""
        before, decoded = self.pipe.__dict__[self.denoiser_name], self.vae.__dict__.get("decode")
        self.pipe.__dict__[self.denoiser_name] = fn
        if decoder is not None:
            self.vae.__dict__["decode"] = decoder
        try:
            yield
        finally:
            self.pipe.__dict__[self.denoiser_name] = before
            if decoded is None:
                self.vae.__dict__.pop("decode", None)
            else:
                self.vae.__dict__["decode"] = decoded

    def resolution_dims(self) -> dict[str, tuple[int, ...]]:
        """The dimensions of the denoiser's inputs that follow the image's size, by argument name: what `--dynamic
        mark` marks (a UNet's latents' height and width; Flux's latent patches and their position ids)."""
        return {"hidden_states": (1,), "img_ids": (0,)} if self.packed else {"sample": (2, 3)}

    def marking(self, fn):
        """`fn` (the compiled denoiser) with torch._dynamo.mark_dynamic on the dimensions that follow the image's size
        of each call's inputs, which the pipeline makes anew at each step: a new resolution then needs no new
        graph."""
        dims = self.resolution_dims()

        def marked(named: dict):
            for name, marks in dims.items():
                for dim in marks if torch.is_tensor(named.get(name)) else ():
                    torch._dynamo.mark_dynamic(named[name], dim)
            return fn(**named)

        return self.stand_in(marked, fn)

    def decoder_marking(self, fn):
        """`fn` (the compiled decode) with its latents' height and width marked dynamic before each call."""

        def marked(latents, *args, **kwargs):
            torch._dynamo.mark_dynamic(latents, 2)
            torch._dynamo.mark_dynamic(latents, 3)
            return fn(latents, *args, **kwargs)

        return marked

    def stand_in(self, call, attributes):
        """What the pipeline calls in its denoiser's place: `call` with the denoiser's inputs by name, every other
        attribute (the config, dtype the pipeline reads) `attributes`'s."""
        return _StandIn(call, inspect.signature(self.denoiser.forward), attributes)

    def denoiser_inputs(self, latents, prompt_embeds, **embeds) -> dict:
        """The inputs, by name, the pipeline hands its denoiser at the first step (guidance: the batch doubled;
        Flux: latents packed, position ids), caught by running it eagerly up to that call."""
        caught = {}

        def hook(module, args, kwargs):
            caught.update(named(inspect.signature(module.forward), args, kwargs))
            raise _Captured

        handle = self.denoiser.register_forward_pre_hook(hook, with_kwargs=True)
        try:
            with self.part_replaced(self.denoiser):  # caught from eager's call, whatever is timed
                Pipeline.forward(self, latents, prompt_embeds, **embeds)
        except _Captured:
            pass
        finally:
            handle.remove()
        return caught

    def decoder_share(self, call, inputs: dict, clock, calls: int = 3) -> float:
        """The median share of an image's time (`call(**inputs)`: this pipeline, or its compiled denoiser swapped
        in) that follows its last denoiser step: the decoder's and the image's post-processing. Each step's end is
        waited for (the device synchronized), so these calls are timed apart from the loop."""
        shares = []
        for _ in range(calls):
            ends = []

            def mark():
                clock.sync()
                ends.append(clock.now_ns())

            clock.sync()
            start, self.marks = clock.now_ns(), mark
            try:
                call(**inputs)
            finally:
                self.marks = None
            clock.sync()
            end = clock.now_ns()
            shares.append((end - ends[-1]) / (end - start))
        return sorted(shares)[len(shares) // 2]

    def forward(self, latents, prompt_embeds, **embeds):
        """One image per prompt, of the size the latents make (latents: batch, channels, height / f, width / f)."""
        factor = self.pipe.vae_scale_factor
        height, width = latents.shape[-2] * factor, latents.shape[-1] * factor
        if self.packed:  # Flux's transformer takes its latents as 2x2 patches, in a sequence
            b, c, h, w = latents.shape
            latents = self.pipe._pack_latents(latents, b, c, h, w)
        last = {}

        def keep(pipe, step, timestep, kwargs):
            last["latents"] = kwargs["latents"]
            if self.marks is not None:
                self.marks()
            return {}

        # The ancestral samplers draw noise at each step: the same draws for every call, so calls can be compared
        generator = torch.Generator(latents.device).manual_seed(0)
        image = self.pipe(latents=latents, prompt_embeds=prompt_embeds, **embeds, height=height, width=width,
                          num_inference_steps=self.steps, guidance_scale=self.guidance, generator=generator,
                          output_type="pt", return_dict=False, callback_on_step_end=keep)[0]
        return {"image": image, "latents": last["latents"]}


def named(signature, args, kwargs) -> dict:
    """A call's arguments by their names (keyword-only ones and a **kwargs' own at the top)."""
    bound = signature.bind(*args, **kwargs).arguments
    var = next((p.name for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD), None)
    return {**{k: v for k, v in bound.items() if k != var}, **bound.get(var, {})}


class _StandIn:
    """Called in the denoiser's place (Pipeline.stand_in): its inputs by name to `call`, its attributes another's."""

    def __init__(self, call, signature, attributes):
        self.call, self.signature, self.attributes = call, signature, attributes

    def __call__(self, *args, **kwargs):
        return self.call(named(self.signature, args, kwargs))

    def __getattr__(self, name):
        return getattr(self.attributes, name)


class _Captured(Exception):
    """Raised by the denoiser's pre-hook once it holds the first step's inputs: nothing after it needs to run."""


class Step(Pipeline):
    """One denoiser step alone (what diffusers' own benchmarks time), called with the inputs its pipeline hands the
    denoiser at the first step (guidance: the batch doubled; Flux: latents packed, position ids): caught once per
    input shape by running the pipeline, eagerly, up to that call. Returns the denoiser's prediction."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.caught: dict = {}

    def forward(self, latents, prompt_embeds, **embeds):
        key = tuple((k, tuple(v.shape), v.dtype, str(v.device)) for k, v in
                    sorted({"latents": latents, "prompt_embeds": prompt_embeds, **embeds}.items()))
        if key not in self.caught:
            self.caught[key] = self.denoiser_inputs(latents, prompt_embeds, **embeds)
        out = getattr(self.pipe, self.denoiser_name)(**self.caught[key])  # the compiled denoiser, where swapped in
        return {"sample": out[0] if isinstance(out, tuple) else out.sample}
