"""Probes of dilated (atrous) convolutions: CONV_2D and DEPTHWISE_CONV_2D with dilation > 1,
which DeepLabV3's ASPP and dilated backbones (FCN, LRASPP's MobileNetV3) use and the seed never
measured on the MDLA (the target says `dilation_source = "assumed: ..."`; the adapter even has
NeuronCompilation_setSWDilatedConv). Each is a 3x3 window on an 8x8 map with per-channel
weights and stride 1:

- dilation 2, pads (2, 2, 2, 2): the "same" padding of a dilated 3x3 (PyTorch's padding =
  dilation), equal to TF SAME here, so only the dilation is new;
- dilation 6, pads (6, 6, 6, 6): an ASPP branch on a small map, most taps in the padding.

The variants have role "dilation": the target file's `dilation` (and `dilation_source`) of the
op say whether they mapped, bit-exact with `run_int8`.
"""

from __future__ import annotations

from functools import partial

from mdla_ir.ops import OpKind
from workbench.probe.model import Probe, ProbeModel
from workbench.probe.windows import conv

DILATIONS = (2, 6)


def _model(kind: OpKind, dilation: int) -> ProbeModel:
    pads = (dilation,) * 4
    return ProbeModel(conv(kind, True, 1, pads, f"d{dilation}", dilation=dilation))


def dilated_probes() -> list[Probe]:
    return [
        Probe(
            kind.name,
            f"3x3 dilation {d}",
            "dilation",
            partial(_model, kind, d),
            "dilation > 1 is assumed in the target file",
        )
        for kind in (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D)
        for d in DILATIONS
    ]
