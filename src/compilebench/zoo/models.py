"""The guide's models. Each offline config mirrors its checkpoint's config.json; sizes and parameter counts
are in ../shared/MODELS.md. Tiny configs keep the architecture and shrink widths and depths."""

from __future__ import annotations

from compilebench.zoo.entry import HFModel

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]
HALF = [0.5, 0.5, 0.5]
BICUBIC, BILINEAR = 3, 2  # PIL resample codes, as stored in preprocessor_config.json
TINY_IMAGE = 32  # tiny configs take 32x32 images: enough for every stride, cheap to compile


def _resnet_50():
    from transformers import ResNetConfig

    return ResNetConfig(
        embedding_size=64,
        hidden_sizes=[256, 512, 1024, 2048],
        depths=[3, 4, 6, 3],
        layer_type="bottleneck",
        hidden_act="relu",
        downsample_in_first_stage=False,
        num_labels=1000,
    )


def _resnet_tiny():
    from transformers import ResNetConfig

    return ResNetConfig(
        embedding_size=8, hidden_sizes=[8, 16, 16, 32], depths=[1, 1, 1, 1], layer_type="bottleneck", num_labels=10
    )


def _vit_base():
    from transformers import ViTConfig

    return ViTConfig(
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        layer_norm_eps=1e-12,
        image_size=224,
        patch_size=16,
        qkv_bias=True,
        num_labels=1000,
    )


def _vit_tiny():
    from transformers import ViTConfig

    return ViTConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        image_size=TINY_IMAGE,
        patch_size=8,
        num_labels=10,
    )


MODELS = [
    HFModel(
        name="vit",
        label="Image Classification/ViT",
        task="image-classification",
        checkpoint="google/vit-base-patch16-224",
        model_class="ViTForImageClassification",
        config=_vit_base,
        tiny_config=_vit_tiny,
        processor_class="ViTImageProcessorPil",
        processor_kwargs=dict(size={"height": 224, "width": 224}, resample=BILINEAR, image_mean=HALF, image_std=HALF),
        tiny_processor_kwargs=dict(size={"height": TINY_IMAGE, "width": TINY_IMAGE}),
    ),
    HFModel(
        name="resnet-50",
        label="Image Classification/ResNet",
        task="image-classification",
        checkpoint="microsoft/resnet-50",
        model_class="ResNetForImageClassification",
        config=_resnet_50,
        tiny_config=_resnet_tiny,
        processor_class="ConvNextImageProcessorPil",
        processor_kwargs=dict(
            size={"shortest_edge": 224}, crop_pct=0.875, resample=BICUBIC, image_mean=IMAGENET_MEAN, image_std=IMAGENET_STD
        ),
        tiny_processor_kwargs=dict(size={"shortest_edge": TINY_IMAGE}),
    ),
]
