"""The input contract's preprocessing: presets, channel order, resize and crop, and that a
record the stock modes describe goes through `prepare` unchanged (old manifests read alike)."""

from __future__ import annotations

import numpy as np
import pytest

from mdla_zoo import ZooError, prepare
from mdla_zoo.contract import PRESETS, prepare_contract, prepare_record

RNG = np.random.default_rng(7)
PHOTO = RNG.integers(0, 256, (50, 70, 3), dtype=np.uint8)
SMALL = RNG.integers(0, 256, (4, 6, 3), dtype=np.uint8)


def test_a_stock_mode_record_is_prepare_bit_for_bit() -> None:
    for mode in ("imagenet", "tf"):
        mean, std = PRESETS[mode]
        got = prepare_record(PHOTO, mode, (32, 40), mean, std)
        assert np.array_equal(got, prepare(PHOTO, mode, (32, 40)))


def test_the_contract_path_matches_prepare_on_its_geometry() -> None:
    mean, std = PRESETS["imagenet"]
    got = prepare_contract(PHOTO, (32, 40), mean, std)
    np.testing.assert_allclose(got, prepare(PHOTO, "imagenet", (32, 40)), rtol=0, atol=1e-5)
    tf_mean, tf_std = PRESETS["tf"]
    tf = prepare_contract(PHOTO, (32, 40), tf_mean, tf_std)
    np.testing.assert_allclose(tf, prepare(PHOTO, "tf", (32, 40)), rtol=0, atol=1e-5)


def test_no_crop_keeps_every_pixel_and_normalizes_as_written() -> None:
    # resize=0 to the photo's own size: PIL returns the pixels unchanged, so the formula
    # x = (p / 255 - mean) / std is checked on the raw pixels
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    got = prepare_contract(SMALL, (4, 6), mean, std, resize=0)
    want = (SMALL.astype(np.float32) / 255 - np.asarray(mean, np.float32)) / np.asarray(
        std, np.float32
    )
    assert got.shape == (1, 3, 4, 6)
    np.testing.assert_allclose(got[0].transpose(1, 2, 0), want, rtol=1e-6)


def test_bgr_reverses_the_pixels_and_takes_mean_std_in_its_own_order() -> None:
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    rgb = prepare_contract(SMALL, (4, 6), mean, std, resize=0)
    bgr = prepare_contract(SMALL, (4, 6), mean[::-1], std[::-1], channels="bgr", resize=0)
    np.testing.assert_allclose(bgr, rgb[:, ::-1], rtol=1e-6)


@pytest.mark.parametrize(("preset", "lo", "hi"), [("zero1", 0.0, 1.0), ("minus1to1", -1.0, 1.0)])
def test_range_presets_span_their_range(preset: str, lo: float, hi: float) -> None:
    ramp = np.tile(np.arange(256, dtype=np.uint8)[None, :, None], (4, 1, 3))
    mean, std = PRESETS[preset]
    x = prepare_contract(ramp, (4, 256), mean, std, resize=0)
    assert (float(x.min()), float(x.max())) == pytest.approx((lo, hi))
    assert PRESETS["inception"] == PRESETS["minus1to1"]


def test_resize_sets_the_short_side_before_the_centre_crop() -> None:
    mean, std = PRESETS["zero1"]
    # short side 50 -> 32 (no upscale beyond the crop): the 32x32 centre of a 32x45 resize
    tight = prepare_contract(PHOTO, (32, 32), mean, std, resize=32)
    loose = prepare_contract(PHOTO, (32, 32), mean, std, resize=64)
    assert tight.shape == loose.shape == (1, 3, 32, 32)
    assert not np.allclose(tight, loose)  # a different zoom of the same photo


def test_bad_contracts_are_zoo_errors() -> None:
    with pytest.raises(ZooError, match="expected rgb or bgr"):
        prepare_contract(SMALL, (4, 6), (0.5,), (0.5,), channels="yuv")
    with pytest.raises(ZooError, match="std > 0"):
        prepare_contract(SMALL, (4, 6), (0.5,), (0.0,))
    with pytest.raises(ZooError, match="records no mean/std"):
        prepare_record(SMALL, "custom", (4, 6), (), (), channels="bgr")
