"""The guide's models' configs, written in code so they build offline. Each full config mirrors its checkpoint's
config.json (tests/test_zoo.py checks the parameter counts and input shapes); each tiny config keeps the
architecture and shrinks widths and depths. Each function imports transformers itself: it loads in a worker only."""

from __future__ import annotations

TINY_IMAGE = 32  # tiny configs take 32x32 images: enough for every stride, cheap to compile


def resnet_50():
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


def resnet_tiny():
    from transformers import ResNetConfig

    return ResNetConfig(
        embedding_size=8, hidden_sizes=[8, 16, 16, 32], depths=[1, 1, 1, 1], layer_type="bottleneck", num_labels=10
    )


def vit_base():
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


def vit_tiny():
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



def beit_base():
    from transformers import BeitConfig

    return BeitConfig(
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        image_size=224,
        patch_size=16,
        use_absolute_position_embeddings=False,
        use_relative_position_bias=True,
        use_shared_relative_position_bias=False,
        use_mask_token=False,
        layer_scale_init_value=0.1,
        use_mean_pooling=True,
        layer_norm_eps=1e-12,
        num_labels=21841,
    )


def beit_tiny():
    from transformers import BeitConfig

    return BeitConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=TINY_IMAGE,
        patch_size=8, use_absolute_position_embeddings=False, use_relative_position_bias=True,
        layer_scale_init_value=0.1, use_mean_pooling=True, num_labels=10,
    )


def convnext_large():
    from transformers import ConvNextConfig

    return ConvNextConfig(hidden_sizes=[192, 384, 768, 1536], depths=[3, 3, 27, 3], layer_scale_init_value=1e-6, num_labels=1000)


def convnext_tiny():
    from transformers import ConvNextConfig

    return ConvNextConfig(hidden_sizes=[8, 16, 16, 32], depths=[1, 1, 2, 1], num_labels=10)


def segformer_b0():
    from transformers import SegformerConfig

    return SegformerConfig(
        num_encoder_blocks=4,
        depths=[2, 2, 2, 2],
        sr_ratios=[8, 4, 2, 1],
        hidden_sizes=[32, 64, 160, 256],
        patch_sizes=[7, 3, 3, 3],
        strides=[4, 2, 2, 2],
        num_attention_heads=[1, 2, 5, 8],
        mlp_ratios=[4, 4, 4, 4],
        decoder_hidden_size=256,
        num_labels=150,
    )


def segformer_tiny():
    from transformers import SegformerConfig

    return SegformerConfig(
        depths=[1, 1, 1, 1], hidden_sizes=[8, 16, 16, 32], num_attention_heads=[1, 1, 1, 2], decoder_hidden_size=16, num_labels=5,
    )


def _swin(embed_dim, depths, heads, window, image_size):
    from transformers import SwinConfig

    return SwinConfig(
        image_size=image_size, embed_dim=embed_dim, depths=depths, num_heads=heads, window_size=window,
        drop_path_rate=0.3, out_features=["stage1", "stage2", "stage3", "stage4"],
    )


def _mask2former(backbone, **overrides):
    from transformers import Mask2FormerConfig

    return Mask2FormerConfig(backbone_config=backbone, **overrides)


def mask2former_swin_tiny():
    return _mask2former(_swin(96, [2, 2, 6, 2], [3, 6, 12, 24], 7, 224), num_labels=133, num_queries=100,
                        encoder_layers=6, decoder_layers=10)


def mask2former_tiny():
    # 32 channels: the pixel decoder's GroupNorm has 32 groups
    return _mask2former(_swin(8, [1, 1, 1, 1], [1, 1, 1, 1], 2, TINY_IMAGE), num_labels=5, num_queries=4,
                        feature_size=32, mask_feature_size=32, hidden_dim=32, encoder_feedforward_dim=32,
                        dim_feedforward=32, encoder_layers=1, decoder_layers=2, num_attention_heads=2)


def _maskformer(backbone, decoder: dict, **overrides):
    from transformers import DetrConfig, MaskFormerConfig, MaskFormerSwinConfig

    swin = MaskFormerSwinConfig(**{k: v for k, v in backbone.to_dict().items() if k in MaskFormerSwinConfig().to_dict()})
    # Only DETR's transformer decoder is used; its backbone fields are never built.
    decoder = DetrConfig(use_timm_backbone=False, backbone_config=resnet_tiny(), **decoder)
    return MaskFormerConfig(backbone_config=swin, decoder_config=decoder, **overrides)


def maskformer_swin_base():
    return _maskformer(_swin(128, [2, 2, 18, 2], [4, 8, 16, 32], 12, 384), dict(decoder_layers=6),
                       num_labels=150, num_queries=100)


def maskformer_tiny():
    decoder = dict(decoder_layers=1, d_model=32, decoder_attention_heads=2, decoder_ffn_dim=32)
    return _maskformer(_swin(8, [1, 1, 1, 1], [1, 1, 1, 1], 2, TINY_IMAGE), decoder, num_labels=5, num_queries=4,
                       fpn_feature_size=32, mask_feature_size=32)


def deeplabv3_mobilenet_v2():
    from transformers import MobileNetV2Config

    return MobileNetV2Config(
        depth_multiplier=1.0, image_size=513, output_stride=8, tf_padding=True, hidden_act="relu6",
        first_layer_is_expansion=True, finegrained_output=True, classifier_dropout_prob=0.1, num_labels=21,
    )


def deeplabv3_tiny():
    from transformers import MobileNetV2Config

    return MobileNetV2Config(depth_multiplier=0.25, image_size=TINY_IMAGE, output_stride=8, num_labels=5)


def owlvit_base_patch32():
    from transformers import OwlViTConfig

    return OwlViTConfig(
        text_config=dict(vocab_size=49408, hidden_size=512, intermediate_size=2048, num_hidden_layers=12,
                         num_attention_heads=8, max_position_embeddings=16),
        vision_config=dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                           image_size=768, patch_size=32),
        projection_dim=512,
    )


def owlvit_tiny():
    from transformers import OwlViTConfig

    return OwlViTConfig(
        text_config=dict(vocab_size=49408, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, max_position_embeddings=16),
        vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                           image_size=TINY_IMAGE, patch_size=8),
        projection_dim=16,
    )


def _resnet_backbone(depths):
    from transformers import ResNetConfig

    # transformers 5 builds DETR with a timm backbone by default; this is the same ResNet in transformers' own
    # implementation (MODELS.md), built offline.
    return ResNetConfig(depths=depths, layer_type="bottleneck", out_features=["stage4"])


def detr(depths, cls="DetrConfig", **overrides):
    import transformers

    return getattr(transformers, cls)(
        use_timm_backbone=False, use_pretrained_backbone=False, backbone_config=_resnet_backbone(depths),
        num_labels=91, **overrides  # COCO's 91 category ids, as the checkpoints' id2label
    )


def detr_tiny(cls="DetrConfig"):
    import transformers
    from transformers import ResNetConfig

    backbone = ResNetConfig(embedding_size=8, hidden_sizes=[8, 16, 16, 32], depths=[1, 1, 1, 1], layer_type="bottleneck",
                            out_features=["stage4"])
    return getattr(transformers, cls)(
        use_timm_backbone=False, use_pretrained_backbone=False, backbone_config=backbone, d_model=16,
        encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=32, decoder_ffn_dim=32, num_queries=4, num_labels=5,
    )
