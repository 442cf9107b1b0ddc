"""Stock torchvision models that need issue 15's exact rewrites, end to end (random init, seed 0,
BatchNorm statistics set on random data; 2 random calibration inputs, 1 random test input):

    model | ops on mtk-mdla | emu == run_int8 | LiteRT == run_int8 | float rel. err | cosine |
    conv GMAC imported -> device | legalize s | quantize s

The cosine is INT8 vs FP32 logits on a random input (random weights: a consistency figure, not
an accuracy). The MAC column shows what the rewrites cost: grouped convs become block-diagonal
dense convs (groups x that layer's MACs), channel selections 1x1 convs where not folded.
The measurement is `bench/coverage.py`'s (`subject`, `measure`); this prints other columns.

    .venv/bin/python bench/rewrites.py [shufflenet_v2_x1_0 vgg11_bn resnext50_32x4d ...]
"""

from __future__ import annotations

import sys

from coverage import Row, measure, subject  # bench/coverage.py, beside this file

MODELS = ["shufflenet_v2_x1_0", "vgg11_bn", "resnext50_32x4d", "regnet_y_400mf"]


def render(r: Row) -> str:
    if r.failed:
        return f"| {r.name} | failed at {r.failed[0]}: {r.failed[1]} |"
    assert r.mapped is not None
    assert r.macs is not None
    error = f"{r.float_error:.1e}" if r.float_error is not None else "-"
    return (
        f"| {r.name} | {r.mapped[0]}/{r.mapped[1]} | {r.emu_exact} | {r.lite_exact} | {error} | "
        f"{r.cosine:.4f} | {r.macs[0]:.2f} -> {r.macs[1]:.2f} | "
        f"{r.seconds['legalize']:.1f} | {r.seconds['quantize']:.1f} |"
    )


def main() -> None:
    print(
        "| model | ops on mtk-mdla | emu == run_int8 | LiteRT == run_int8 | float rel. err "
        "| cosine | conv GMAC | legalize s | quantize s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in sys.argv[1:] or MODELS:
        print(render(measure(subject(name))), flush=True)


if __name__ == "__main__":
    main()
