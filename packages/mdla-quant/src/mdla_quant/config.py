"""`QuantConfig`: how activations are calibrated and how the int8 arithmetic rounds."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from mdla_ir.provenance import ROUNDINGS, QuantRecord
from mdla_quant.errors import QuantError
from mdla_quant.weight_fit import WEIGHT_ROUNDINGS, WEIGHT_SCALES

METHODS = ("minmax", "percentile", "mse", "entropy")
RECONSTRUCTIONS = ("layer", "block")


def _one_of(key: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise QuantError(f"unknown {key} `{value}`: expected one of {', '.join(choices)}")


@dataclass(frozen=True, slots=True)
class QuantConfig(QuantRecord):
    """Post-training quantization settings.

    method       activation range from calibration: `minmax` (observed range), `percentile`
                 (clip both tails at `percentile`), `mse` (clipping that minimizes the
                 quantization MSE over the histogram), `entropy` (KL divergence, TensorRT-style);
                 the graph's outputs keep their observed range under every method
    rounding     `double`: TFLite's reference kernels (the bit-exact target, default);
                 `single`: TFLITE_SINGLE_ROUNDING (what XNNPACK matches)
    bias_correction  shift each conv/FC bias by the mean int8-vs-float output error per channel,
                 measured on the calibration data (needs a re-iterable calibration set)
    equalize     cross-layer equalization of conv pairs before calibration (`equalize.py`:
                 exact in float; pairs through RELU6 are left alone), then high-bias absorption
                 (`bias_absorption.py`: needs a re-iterable calibration set)
    adaround     AdaRound iterations per weighted layer (`adaround.py`), 0 = round to nearest;
                 a few hundred is typical (needs a re-iterable calibration set)
    reconstruction   what AdaRound reconstructs: `layer`, each weighted op's output; `block`,
                 each inverted-residual block's output, its ops' roundings fit together
                 (`block_reconstruction.py`, BRECQ-style; other ops layer by layer)
    a16          names of the activation tensors held in int16 (TFLite's 16x8 scheme: symmetric,
                 zero point 0, int8 weights, int64 bias); QUANTIZE ops convert where an int16
                 tensor meets int8 (names are checked against the graph by `quantize`)
    a16_gain_db, a16_mode   why those names (recorded, not used by `quantize`): each one's
                 measured output-SQNR gain in dB, one per a16 name or none, and the request
                 that chose them (`--a16 auto:25%`'s "auto:25%", or its name patterns)
    weight_scale     the int8 weights' per-channel scale: `max` (max|w| / 127) or `mse` (the
                 clip of least squared round-trip error per channel, `weight_fit.py`)
    weight_rounding  `mean` (default): round to nearest, flips that cancel each kernel's
                 rounding error sum, then each bias takes its weights' mean output error on
                 the calibration data (from statistics the calibration pass gathers);
                 `kernel`: the flips alone; `weighted`: the flips, then per output channel
                 flips weighed by the input channels' means and variances; `balanced`: the
                 flips, then per output channel sums (data-free, SQuant-style); `nearest`:
                 round to nearest (`weight_fit.py`). AdaRound, when on, keeps these weights
                 for a layer where its own rounding is no better; `mean` then shifts no
                 bias (AdaRound's fit takes the mean error in), so it acts as `kernel`
    target, device   whose scale constraints apply (fixed output scales, shared scales)

    The fields and their defaults are `mdla_ir.QuantRecord`'s (what a graph's provenance
    records); this class adds their validation.
    """

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise QuantError(
                f"unknown calibration method `{self.method}`: expected one of {', '.join(METHODS)}"
            )
        if self.rounding not in ROUNDINGS:
            raise QuantError(f"unknown rounding `{self.rounding}`: expected double or single")
        if not 50.0 < self.percentile <= 100.0:
            raise QuantError(f"percentile {self.percentile} is outside (50, 100]")
        if self.adaround < 0:
            raise QuantError(f"adaround={self.adaround}: give iterations per layer, or 0 for off")
        if self.reconstruction not in RECONSTRUCTIONS:
            raise QuantError(
                f"unknown reconstruction `{self.reconstruction}`: expected layer or block"
            )
        if self.reconstruction == "block" and not self.adaround:
            raise QuantError(
                "reconstruction=block fits AdaRound's roundings per block: give AdaRound "
                "iterations too (adaround > 0, e.g. --adaround 300)"
            )
        _one_of("weight_scale", self.weight_scale, WEIGHT_SCALES)
        _one_of("weight_rounding", self.weight_rounding, WEIGHT_ROUNDINGS)
        if self.bins < 256 or self.bins % 4:
            raise QuantError(f"bins={self.bins}: use a multiple of 4, at least 256")
        try:
            QuantRecord.__post_init__(self)
        except ValueError as e:
            raise QuantError(str(e)) from None
        if len(set(self.a16)) != len(self.a16) or "" in self.a16:
            raise QuantError(f"a16 {list(self.a16)}: name each tensor once, none empty")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def record(self) -> QuantRecord:
        """This config as the graph's provenance holds it (mdla_ir's twin record)."""
        return QuantRecord(**self.as_dict())
