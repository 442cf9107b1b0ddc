"""The one image preprocessing: short side to size/0.875 (bicubic), centre crop, normalize."""

from __future__ import annotations

import numpy as np
import pytest
import skimage.data

from mdla_zoo import IMAGENET_MEAN, IMAGENET_STD, ZooError, prepare


def test_crop_and_tf_normalization_on_an_image_already_at_the_resize_size() -> None:
    # 256 = round(224 / 0.875): no resize, so the result is the exact centre crop
    image = np.random.default_rng(0).integers(0, 256, (256, 512, 3), dtype=np.uint8)
    x = prepare(image, "tf", (224, 224))
    want = (image[16:240, 144:368].astype(np.float32) - 127.0) / 128.0
    assert x.shape == (1, 3, 224, 224)
    assert x.dtype == np.float32
    assert x.flags.c_contiguous
    np.testing.assert_array_equal(x[0].transpose(1, 2, 0), want)


def test_imagenet_is_mean_std_of_the_same_pixels() -> None:
    photo = skimage.data.coffee()
    tf, imagenet = prepare(photo, "tf"), prepare(photo, "imagenet")
    pixels = tf * 128.0 + 127.0
    mean, std = IMAGENET_MEAN[:, None, None], IMAGENET_STD[:, None, None]
    np.testing.assert_allclose(imagenet, (pixels / 255.0 - mean) / std, atol=1e-5)


def test_grey_gives_three_equal_channels_and_alpha_is_dropped() -> None:
    grey = prepare(skimage.data.camera(), "imagenet", (160, 192))
    assert grey.shape == (1, 3, 160, 192)
    raw = grey * IMAGENET_STD[:, None, None] + IMAGENET_MEAN[:, None, None]
    np.testing.assert_allclose(raw[0, 0], raw[0, 1], atol=1e-6)
    np.testing.assert_allclose(raw[0, 0], raw[0, 2], atol=1e-6)
    rgb = skimage.data.chelsea()
    rgba = np.concatenate([rgb, np.zeros((*rgb.shape[:2], 1), np.uint8)], axis=-1)
    np.testing.assert_array_equal(prepare(rgba, "tf"), prepare(rgb, "tf"))


def test_the_numbers_of_the_two_implementations_it_replaced() -> None:
    # mdla_ir.zoo.prepare_image and workbench.images.prepare (identical) gave these
    tf = prepare(skimage.data.chelsea(), "tf").astype(np.float64)
    assert tf.sum() == pytest.approx(-21685.8125, abs=1e-3)
    np.testing.assert_allclose(tf[0, :, 100, 100], [-0.546875, -0.7734375, -0.8671875])
    imagenet = prepare(skimage.data.chelsea(), "imagenet").astype(np.float64)
    assert imagenet.sum() == pytest.approx(-15960.2004, abs=1e-2)
    np.testing.assert_allclose(
        imagenet[0, :, 100, 100], [-1.14179301, -1.54551816, -1.52557731], rtol=1e-6
    )


def test_an_unknown_mode_is_an_error() -> None:
    with pytest.raises(
        ZooError, match=r"unknown preprocessing `caffe` \(expected imagenet, tf, stretch\)"
    ):
        prepare(skimage.data.chelsea(), "caffe")
