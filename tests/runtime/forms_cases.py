"""Every operand form of every operation the op schema lists, built as one-operation Neuron models.

    cases()             one FormCase per (operation, form, operand count, layout flag), from
                        `mdla_ir.schema.BY_CODE`: each form's optional trailing operands give an
                        operand count each, and a form with an NCHW flag is built with it false
                        and true
    build(case)         (NeuronModelBuilder, output shape): the model of that case, finished

The operands come from the slot names of the forms (one value per name, below); a form whose
slot has no value here fails `build` with a KeyError naming it, so a new form cannot slip by.
Geometry: activations (1, 8, 8, 4) at scale 0.5, zero point 0; 3x3 windows, stride 1, pads 1
(SAME for the implicit forms), so every window op keeps 8x8.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mdla_ir.forms import TENSOR_INT32, Form, match
from mdla_ir.schema import BY_CODE, OpSchema
from tests.runtime.test_emu_support import QUANT8_SIGNED, QUANT8_SYMM, NeuronModelBuilder

X = (1, 8, 8, 4)
Q = (0.5, 0)
W_SCALE = 0.01
INTS = {
    **dict.fromkeys(("pad_left", "pad_right", "pad_top", "pad_bottom"), 1),
    **dict.fromkeys(("stride_w", "stride_h", "multiplier", "dilation_w", "dilation_h"), 1),
    **dict.fromkeys(("filter_w", "filter_h"), 3),
    **dict.fromkeys(("out_w", "out_h"), 16),
    "fuse": 0,
    "padding_code": 1,  # SAME
    "block_size": 2,
    "keep_dims": 1,
    "groups": 2,
    **dict.fromkeys(("begin_mask", "end_mask", "shrink_axis_mask"), 0),
}
FLOATS = {"scale_w": 2.0, "scale_h": 2.0, "beta": 1.0}
BOOLS = ("align_corners", "half_pixel_centers", "adj_x", "adj_y")
TENSORS: dict[str, list[Any]] = {
    "shape": [1, 256],
    "axes": [1, 2],
    "paddings": [[0, 0], [1, 1], [1, 1], [0, 0]],
    "output_shape": [1, 8, 8, 6],
    "perm": [0, 2, 1, 3],
    "begin": [0, 0, 0, 0],
    "size": [1, 8, 8, 2],
    "end": [1, 8, 8, 4],
    "strides": [1, 1, 1, 1],
}
# Output shapes that differ from the first input's; output quantization where the op fixes it.
OUT_SHAPES = {
    "CONV_2D": (1, 8, 8, 6),
    "TRANSPOSE_CONV_2D": (1, 8, 8, 6),
    "DEPTH_TO_SPACE": (1, 16, 16, 1),
    "RESIZE_BILINEAR": (1, 16, 16, 4),
    "RESIZE_NEAREST_NEIGHBOR": (1, 16, 16, 4),
    "FULLY_CONNECTED": (16, 5),
    "CONCATENATION": (1, 8, 8, 8),
    "RESHAPE": (1, 256),
    "MEAN": (1, 1, 1, 4),
    "PAD": (1, 10, 10, 4),
    "SLICE": (1, 8, 8, 2),
    "BATCH_MATMUL": (1, 8, 8, 8),
}
OUT_QUANT = {"LOGISTIC": (1 / 256, -128), "SOFTMAX": (1 / 256, -128), "TANH": (1 / 128, 0)}
FILTERS = {
    "CONV_2D": (6, 3, 3, 4),
    "DEPTHWISE_CONV_2D": (1, 3, 3, 4),
    "TRANSPOSE_CONV_2D": (6, 3, 3, 4),
    "FULLY_CONNECTED": (5, 16),
}


@dataclass(frozen=True)
class FormCase:
    entry: OpSchema
    form: int  # index into entry.forms
    slots: tuple[str, ...]  # the slots present (a prefix of the form's)
    nchw: bool

    @property
    def name(self) -> str:
        layout = "-nchw" if self.nchw else ""
        return f"{self.entry.name}/{self.form}/{len(self.slots)}{layout}"


# A Neuron operand type of each type letter (`*`: an activation).
LETTER_TYPE = {"a": 14, "w": 13, "t": 4, "i": 1, "f": 0, "F": 3, "B": 6, "*": 14}


def _counts(form: Form) -> list[int]:
    """The slot counts (prefixes of form.slots) the form admits; a `+` slot stands for two."""
    types = [LETTER_TYPE[letter[0]] for letter in form.letters]
    many = [2 if letter.endswith("+") else 1 for letter in form.letters]
    out = []
    for k in range(len(form.slots) + 1):
        given = [t for t, n in zip(types[:k], many[:k], strict=True) for _ in range(n)]
        if match(form.types, given):
            out.append(k)
    return out


def cases() -> list[FormCase]:
    out = []
    for _, entry in sorted(BY_CODE.items()):
        for i, form in enumerate(entry.forms):
            for k in _counts(form):
                slots = form.slots[:k]
                layouts = (False, True) if "nchw" in slots else (False,)
                out.extend(FormCase(entry, i, slots, nchw) for nchw in layouts)
    return out


def _bias(b: NeuronModelBuilder, case: FormCase) -> int:
    channels = FILTERS[case.entry.name][3 if case.entry.name == "DEPTHWISE_CONV_2D" else 0]
    data = np.arange(channels, dtype=np.int32) - 2
    return b.const(TENSOR_INT32, data, Q[0] * W_SCALE, 0)


def _filter(b: NeuronModelBuilder, case: FormCase) -> int:
    shape = FILTERS[case.entry.name]
    data = np.random.default_rng(3).integers(-127, 128, shape).astype(np.int8)
    return b.const(QUANT8_SYMM, data, W_SCALE, 0)


ACTIVATIONS = ("x", "a", "b", "lhs", "rhs", "alpha", "inputs")


# Activation shapes other than X: BATCH_MATMUL's (8, 8) @ (8, 8) multiply with either flag.
ACT_SHAPES = {"FULLY_CONNECTED": (16, 16), "BATCH_MATMUL": (1, 8, 8, 8)}


def _activation(b: NeuronModelBuilder, case: FormCase) -> int:
    shape = ACT_SHAPES.get(case.entry.name, X)
    return b.operand(QUANT8_SIGNED, shape, *Q)


def _maker(slot: str, case: FormCase) -> Callable[[NeuronModelBuilder], int]:
    if slot in INTS:
        value = -1 if (slot, case.entry.name) == ("axis", "SOFTMAX") else INTS[slot]
        return lambda b: b.i32(value)
    if slot == "axis":
        return lambda b: b.i32(-1 if case.entry.name == "SOFTMAX" else 3)
    if slot in FLOATS:
        return lambda b: b.f32(FLOATS[slot])
    if slot in BOOLS or slot == "nchw":
        return lambda b: b.boolean(case.nchw if slot == "nchw" else False)
    if slot in TENSORS:
        data = np.array(TENSORS[slot], dtype=np.int32)
        return lambda b: b.const(TENSOR_INT32, data)
    if slot in ("filter", "weights"):
        return lambda b: _filter(b, case)
    if slot == "bias":
        return lambda b: _bias(b, case)
    if slot in ACTIVATIONS:
        return lambda b: _activation(b, case)
    raise KeyError(f"{case.name}: no operand for slot `{slot}` (tests/runtime/forms_cases.py)")


def build(case: FormCase) -> tuple[NeuronModelBuilder, tuple[int, ...], int]:
    """The finished one-operation model of `case`, its output shape, and the rc of
    NeuronModel_finish (the model is returned either way; free it)."""
    b = NeuronModelBuilder()
    ins: list[int] = []
    model_inputs: list[int] = []
    for slot, letter in zip(case.slots, case.entry.forms[case.form].letters, strict=False):
        make = _maker(slot, case)
        made = [make(b) for _ in range(2 if letter.endswith("+") else 1)]
        ins.extend(made)
        model_inputs.extend(made if slot in ACTIVATIONS else [])
    name = case.entry.name
    shape = OUT_SHAPES.get(name, X)
    out = b.operand(QUANT8_SIGNED, shape, *OUT_QUANT.get(name, Q))
    assert b.operation(case.entry.code or 0, ins, [out]) == 0, case.name
    assert b.identify(model_inputs, [out]) == 0, case.name
    return b, shape, b.finish()
