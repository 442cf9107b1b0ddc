"""INT8 vs FP32 accuracy of the whole float -> legalize -> quantize path (issue 4's benchmark).

Part 1, efficientnet_lite0 with its real ImageNet weights: calibrate on augmented crops of the
scikit-image sample photos, validate on *different* crops (other seeds, other crop boxes), and
report per calibration method the INT8-vs-FP32 top-1 agreement and whether INT8 top-1 equals
FP32 top-1 on every original photo.
Part 2, the four torchvision models (random init, seed 0, BatchNorm statistics set on random
data): logits cosine and SQNR per method, and the worst layers.
Or, with --techniques MODELS, a table per calibration method x weight technique (none: the
default compile; nearest, balanced, kernel, weighted, mean: its weights rounded that way,
`--weight-rounding`'s choices; the MSE weight clip; cross-layer equalization with high-bias
absorption, bias correction, AdaRound, CLE + AdaRound, that + bias correction, that with block
reconstruction, CLE + AdaRound with the int16 activations `--a16 auto`, `joint`, `refit`,
`refit:50%` and `refit:75%` choose, and `refit` scoring its rounds on quarters of the whole
calibration set (`folds`), and the logits alone in int16 (`out16`)) on the real-weight
EfficientNet-Lites, judged on held-out inputs; their int8 side runs on the C emulator, checked
against `run_int8` (`emulator_scores.py`); --quick is a brief run of it.

    .venv/bin/python bench/accuracy.py [--crops 200] [--calib 32]
    .venv/bin/python bench/accuracy.py --techniques efficientnet_lite0,efficientnet_lite1 \
        [--crops 200] [--calib 32] [--adaround 300] [--held-out crops|harder] \
        [--methods minmax,mse] [--only none,CLE+AdaRound] [--ceiling] [--check-ref]
    .venv/bin/python bench/accuracy.py --quick
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
import skimage.data
import torch
from PIL import Image

import mdla_ir
from mdla_compile import Compiled, CompileOptions
from mdla_compile import compile as compile_model
from mdla_quant import METHODS, QuantConfig, compare, float_rewrites, run_int8, simulate
from mdla_quant.precision import tensor_costs
from mdla_zoo import Model, load_model, recalibrate_batchnorm
from workbench.output import each as bench_progress

PHOTOS = {
    "chelsea": skimage.data.chelsea,
    "coffee": skimage.data.coffee,
    "rocket": skimage.data.rocket,
    "motorcycle": lambda: skimage.data.stereo_motorcycle()[0],
    "camera": skimage.data.camera,
    "astronaut": skimage.data.astronaut,
}


def crops(images: list[np.ndarray], n: int, seed: int, side: int = 224) -> list[np.ndarray]:
    """Random resized crops (35-100 % of the area, aspect 3/4-4/3), random mirror, side×side."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        img = images[i % len(images)]
        img = np.stack([img] * 3, -1) if img.ndim == 2 else img[..., :3]
        h, w = img.shape[:2]
        area = rng.uniform(0.35, 1.0) * h * w
        aspect = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
        ch = int(min(h, round(np.sqrt(area / aspect))))
        cw = int(min(w, round(np.sqrt(area * aspect))))
        y, x = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
        patch = Image.fromarray(img[y : y + ch, x : x + cw]).resize(
            (side, side), Image.Resampling.BICUBIC
        )
        arr = np.asarray(patch, np.float32)
        if rng.random() < 0.5:
            arr = arr[:, ::-1]
        out.append(((arr - 127.0) / 128.0).transpose(2, 0, 1)[None].astype(np.float32))
    return out


def lite0(n_crops: int, n_calib: int) -> None:
    model = load_model("efficientnet_lite0")
    images = [load() for load in PHOTOS.values()]
    originals = [model.prepare(img) for img in images]
    calib = [[x] for x in crops(images, n_calib, seed=1)]
    first = compile_first(model, calib, QuantConfig(method=METHODS[0]))
    graph = first.device_graph
    held_out = crops(images, n_crops, seed=2)
    fp32_logits = [mdla_ir.run_float(graph, [x])[0][0] for x in held_out]
    fp32 = [int(np.argmax(z)) for z in fp32_logits]
    confident = np.array([margin(z) >= 0.1 for z in fp32_logits])
    fp32_orig = [int(np.argmax(mdla_ir.run_float(graph, [x])[0])) for x in originals]
    print(
        f"efficientnet_lite0 (real weights), {len(graph)} ops after legalize; calibration "
        f"{n_calib} crops, validation {n_crops} other crops of the {len(images)} photos\n"
    )
    print(
        f"{'method':<11} {'bias corr.':<10} {'top-1 agree':>12} {'confident':>10} "
        f"{'originals':>10} {'quantize s':>10} {'int8 img/s':>10}"
    )
    for method in bench_progress(METHODS, "methods"):
        for bias_correction in (False, True):
            setting = sweep(first, QuantConfig(method=method, bias_correction=bias_correction))
            q, t_q = setting.qgraph, setting.seconds["quantize"]
            t0 = time.perf_counter()
            int8 = [int(np.argmax(run_int8(q, [x])[0])) for x in held_out]
            rate = len(held_out) / (time.perf_counter() - t0)
            same = np.array(int8) == np.array(fp32)
            agree, sure = same.mean() * 100, same[confident].mean() * 100
            orig = sum(
                int(np.argmax(run_int8(q, [x])[0])) == f
                for x, f in zip(originals, fp32_orig, strict=True)
            )
            print(
                f"{method:<11} {'yes' if bias_correction else 'no':<10} {agree:>11.1f}% "
                f"{sure:>9.1f}% {orig:>6}/{len(originals)} {t_q:>10.1f} {rate:>10.1f}",
                flush=True,
            )
    print(
        f"\n(confident: the {int(confident.sum())} crops where FP32's top-1 probability leads "
        "the runner-up by at least 0.10)"
    )


def compile_first(model: Model, calib: list[list[np.ndarray]], config: QuantConfig) -> Compiled:
    """`model` through `mdla_compile.compile` with a sweep's first setting (the others
    re-quantize its device graph: `sweep`)."""
    return compile_model(CompileOptions(model, calib=calib, count=len(calib), quant=config))


def sweep(first: Compiled, config: QuantConfig) -> Compiled:
    """`first` for its own setting; its device graph and calibration quantized with `config`
    otherwise (`seconds["quantize"]`: that quantize's time)."""
    return first if config == first.config else first.requantize(config)


def setting_of(method: str, technique: str, iters: int) -> QuantConfig:
    """The QuantConfig of a calibration method and a TECHNIQUES entry (-1: AdaRound `iters`;
    its `a16` request is left to `with_a16`)."""
    options = {k: (iters if v == -1 else v) for k, v in TECHNIQUES[technique].items()}
    options.pop("a16", None)
    options.pop("a16_rounds", None)
    return QuantConfig(method=method, **options)


def with_a16(first: Compiled, config: QuantConfig, technique: str) -> QuantConfig:
    """`config` with the int16 tensors a TECHNIQUES entry's `a16` request (`auto[:BUDGET]`,
    `joint[:BUDGET]`, `refit[:BUDGET]`) chooses on `first`'s device graph and calibration,
    as `workbench compile --a16` does; `outputs`: the graph's outputs, nothing chosen."""
    text = TECHNIQUES[technique].get("a16")
    if not isinstance(text, str):
        return config
    if text == "outputs":  # the logits alone: int16's grid bounds what any range of theirs gives
        names = tuple(first.device_graph.outputs)
        return dataclasses.replace(config, a16=names, a16_gain_db=(), a16_mode=",".join(names))
    from mdla_compile.a16 import a16_request, choose_a16

    request = a16_request(text)
    assert request is not None
    assert request.auto
    graph, calibration = first.device_graph, first.calibration
    rounds = TECHNIQUES[technique].get("a16_rounds", "held")
    picked = choose_a16(
        graph, calibration, config, request.budget, request.joint, request.refit, rounds
    )
    share = sum(c.share for c in picked)
    print(f"  {technique}: {len(picked)} int16 tensors, {share:.1%} of activation bytes:")
    for c in picked:
        print(f"    {c.tensor:<40} {c.gain_db:+.2f} dB (simulated)", flush=True)
    return dataclasses.replace(
        config,
        a16=tuple(c.tensor for c in picked),
        a16_gain_db=tuple(round(c.gain_db, 4) for c in picked),
        a16_mode=text,
    )


def margin(logits: np.ndarray) -> float:
    """FP32 top-1 probability minus the runner-up's."""
    p = np.exp(logits - logits.max())
    top = np.sort(p / p.sum())[::-1]
    return float(top[0] - top[1])


def torchvision_models() -> None:
    print(
        "\ntorchvision models, random init (seed 0), BN statistics from random data; "
        "8 calibration and 4 validation inputs of uniform noise in [-1, 1]\n"
    )
    print(f"{'model':<16} {'method':<11} {'logits cos':>10} {'SQNR dB':>8}  worst layers (SQNR dB)")
    rng = np.random.default_rng(0)
    for spec in bench_progress(
        ["mobilenet_v2", "resnet18", "efficientnet_b0", "squeezenet1_1"], "models"
    ):
        model = load_model(spec, seed=0)
        if spec != "squeezenet1_1":
            recalibrate_batchnorm(model.module)
        calib = [[rng.uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32)] for _ in range(8)]
        val = [[rng.uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32)] for _ in range(4)]
        first = compile_first(model, calib, QuantConfig(method=METHODS[0]))
        graph = first.device_graph
        for method in METHODS:
            report = compare(graph, sweep(first, QuantConfig(method=method)).qgraph, val)
            logits = report.stat(graph.outputs[0])
            worst = ", ".join(f"{t.op} {t.sqnr_db:.1f}" for t in report.worst(3))
            print(
                f"{spec:<16} {method:<11} {logits.cosine:>10.4f} {logits.sqnr_db:>8.1f}  {worst}",
                flush=True,
            )


# Every colour or grey picture scikit-image ships in its wheel (no download): the held-out set of
# the techniques table is augmented crops of all of them, most never seen in calibration.
HELD_OUT_PICTURES = (
    "astronaut", "brick", "camera", "cat", "chelsea", "clock", "coffee", "coins", "colorwheel",
    "grass", "gravel", "horse", "hubble_deep_field", "immunohistochemistry", "logo", "moon",
    "page", "retina", "rocket", "stereo_motorcycle", "text", "cell",
)  # fmt: skip
TECHNIQUES = {  # -1: the --adaround iterations
    "none": {},
    "CLE": {"equalize": True},
    "bias": {"bias_correction": True},
    "CLE+bias": {"equalize": True, "bias_correction": True},
    "nearest": {"weight_rounding": "nearest"},
    "nearest+bias": {"weight_rounding": "nearest", "bias_correction": True},
    "balanced": {"weight_rounding": "balanced"},
    "balanced+bias": {"weight_rounding": "balanced", "bias_correction": True},
    "wclip": {"weight_scale": "mse"},
    "kernel": {"weight_rounding": "kernel"},
    "weighted": {"weight_rounding": "weighted"},
    "mean": {"weight_rounding": "mean"},
    "AdaRound": {"adaround": -1},
    "CLE+AdaRound": {"adaround": -1, "equalize": True},
    "CLE+Ada+bias": {"adaround": -1, "equalize": True, "bias_correction": True},
    "CLE+Ada+block": {"adaround": -1, "equalize": True, "reconstruction": "block"},
    # the two above on the rounding that was the default before `mean`
    "CLE+Ada+nearest": {"adaround": -1, "equalize": True, "weight_rounding": "nearest"},
    "CLE+Ada+kernel": {"adaround": -1, "equalize": True, "weight_rounding": "kernel"},
    "CLE+Ada+block+nearest": {
        "adaround": -1,
        "equalize": True,
        "reconstruction": "block",
        "weight_rounding": "nearest",
    },
    # the graph outputs (the logits) in int16: a 256 times finer grid than any int8 range
    "out16": {"a16": "outputs"},
    "CLE+Ada+a16": {"adaround": -1, "equalize": True, "a16": "auto"},
    "CLE+Ada+joint": {"adaround": -1, "equalize": True, "a16": "joint"},
    "CLE+Ada+refit": {"adaround": -1, "equalize": True, "a16": "refit"},
    "CLE+Ada+refit50": {"adaround": -1, "equalize": True, "a16": "refit:50%"},
    "CLE+Ada+refit75": {"adaround": -1, "equalize": True, "a16": "refit:75%"},
    "CLE+Ada+folds": {"adaround": -1, "equalize": True, "a16": "refit", "a16_rounds": "folds"},
}


def harder(images: list[np.ndarray], n: int, side: int, seed: int) -> list[np.ndarray]:
    """Held-out inputs harder than plain crops: a random resized crop (20-100 % of the area),
    mirror, colour jitter (brightness and contrast x0.6-1.4, saturation x0-1.5), Gaussian blur
    (sigma 0-2 px) and noise (sigma 0-12 grey levels), then the EfficientNet-Lite scaling."""
    from PIL import ImageFilter

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        img = images[i % len(images)]
        img = np.stack([img] * 3, -1) if img.ndim == 2 else img[..., :3]
        h, w = img.shape[:2]
        area = rng.uniform(0.2, 1.0) * h * w
        aspect = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
        ch, cw = int(min(h, np.sqrt(area / aspect))), int(min(w, np.sqrt(area * aspect)))
        y, x = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
        pic = Image.fromarray(img[y : y + ch, x : x + cw]).resize(
            (side, side), Image.Resampling.BICUBIC
        )
        pic = pic.filter(ImageFilter.GaussianBlur(rng.uniform(0, 2)))
        arr = np.asarray(pic, np.float32)
        grey = arr.mean(-1, keepdims=True)
        arr = grey + (arr - grey) * rng.uniform(0.0, 1.5)
        arr = (arr - arr.mean()) * rng.uniform(0.6, 1.4) + arr.mean() * rng.uniform(0.6, 1.4)
        arr = np.clip(arr + rng.normal(0, rng.uniform(0, 12), arr.shape), 0, 255)
        if rng.random() < 0.5:
            arr = arr[:, ::-1]
        out.append(((arr - 127.0) / 128.0).transpose(2, 0, 1)[None].astype(np.float32))
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion k / n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return mid - half, mid + half


def techniques(
    models: list[str],
    n_crops: int,
    n_calib: int,
    iters: int,
    held_out: str,
    methods: list[str],
    chosen: list[str],
    ceiling: bool = False,
    check_all: bool = False,
) -> None:
    """Per model, calibration method and weight technique: top-1 agreement with FP32 on the
    held-out inputs FP32 decides (margin >= 0.05) and on all of them, each with its 95 % Wilson
    interval (the int8 side run on the C emulator, its first inputs, or with `check_all`
    every one, checked byte for byte against `run_int8`: `emulator_scores`), the logits'
    SQNR, the compile (quantize) time, the CPU seconds of the int16 choice and the quantize
    (the first row: of the whole compile), and the share of activation elements held in
    int16, and for a row with int16 tensors the emulated ms per image and
    CPU ratio over its all-int8 twin (`latency_columns`). With `ceiling`, also the
    agreement on all of them of the same network with float weights and the row's int8
    activation grids (`mdla_quant.simulate`): the grids' own cost, which AdaRound's asymmetric
    fit can beat by undoing some activation error through the weights."""
    import skimage.data
    import skimage.util
    from emulator_scores import CHECKED, emulator_scores  # the sibling script

    pictures = []
    for name in HELD_OUT_PICTURES:
        pic = getattr(skimage.data, name)()
        pictures.append(skimage.util.img_as_ubyte(pic[0] if isinstance(pic, tuple) else pic))
    print(
        f"\ntechniques: calibration {n_calib} crops of the 6 sample photos; held out {n_crops} "
        + (
            f"harder inputs from {len(pictures)} pictures"
            if held_out == "harder"
            else "other crops of the same 6 photos (part 1's set)"
        )
        + f"; AdaRound {iters} iterations per layer\n"
    )
    print(
        f"{'model':<19} {'method':<10} {'technique':<15} {'decided (95% CI)':>27} "
        f"{'all (95% CI)':>22} {'SQNR dB':>8} {'compile s':>9} {'CPU s':>6} {'int16':>6} "
        f"{'gap σ':>6} {'emu ms':>6} {'emu ×':>5}" + (f" {'float-w all':>11}" if ceiling else "")
    )
    for spec in bench_progress(models, "models"):
        model = load_model(spec)
        side = int(model.example_inputs[0].shape[-1])
        photos = [load() for load in PHOTOS.values()]
        calib = [[x] for x in crops(photos, n_calib, seed=1, side=side)]
        cpu = time.process_time()
        first = compile_first(model, calib, setting_of(methods[0], chosen[0], iters))
        cpu_first = time.process_time() - cpu
        graph = first.device_graph
        held = (
            harder(pictures, n_crops, side, seed=2)
            if held_out == "harder"
            else crops(photos, n_crops, seed=2, side=side)
        )
        fp32 = [mdla_ir.run_float(graph, [x])[0][0] for x in held]
        decided = np.array([margin(z) >= 0.05 for z in fp32])
        energy = sum(float((z.astype(np.float64) ** 2).sum()) for z in fp32)
        top1, top2 = (np.array([np.argsort(z)[-k] for z in fp32]) for k in (1, 2))
        gaps = np.array([z[a] - z[b] for z, a, b in zip(fp32, top1, top2, strict=True)])
        print(
            f"{spec}: FP32's top-1 leads its runner-up by less than 0.05 / 0.1 / 0.2 in the "
            f"logits on {(gaps < 0.05).sum()} / {(gaps < 0.1).sum()} / {(gaps < 0.2).sum()} of "
            f"{len(held)} inputs (gap σ: the spread of int8's error in that lead)"
        )
        for method in methods:
            for name in chosen:
                cpu = time.process_time()
                config = with_a16(first, setting_of(method, name, iters), name)
                setting = sweep(first, config)
                cpu = time.process_time() - cpu + (cpu_first if setting is first else 0.0)
                q, t_q = setting.qgraph, setting.seconds["quantize"]
                scores = emulator_scores(q, held, len(held) if check_all else CHECKED)
                int8 = [out[0][0] for out in scores.outputs]
                same = np.array(
                    [np.argmax(a) == np.argmax(b) for a, b in zip(int8, fp32, strict=True)]
                )
                err = sum(
                    float(((a - b).astype(np.float64) ** 2).sum())
                    for a, b in zip(int8, fp32, strict=True)
                )
                k_d, n_d = int(same[decided].sum()), int(decided.sum())
                lead = np.array([z[a] - z[b] for z, a, b in zip(int8, top1, top2, strict=True)])
                bound = ""
                if ceiling:
                    rounded = float_rewrites(graph, calib, config)
                    top = [np.argmax(simulate(rounded, q, [x], weights=False)[0][0]) for x in held]
                    k_c = sum(int(t == np.argmax(b)) for t, b in zip(top, fp32, strict=True))
                    bound = f" {k_c:>7}/{len(held)}"
                print(
                    f"{spec:<19} {method:<10} {name:<15} "
                    f"{_rate(k_d, n_d)} of {n_d:>3} {_rate(int(same.sum()), len(same))} "
                    f"{10 * np.log10(energy / err):>8.1f} {t_q:>9.1f} {cpu:>6.1f} "
                    f"{int16_share(graph, config.a16):>6.1%} {np.std(lead - gaps):>6.3f}"
                    f"{latency_columns(first, config, q, held[0])}{bound}",
                    flush=True,
                )


def latency_columns(first: Compiled, config: QuantConfig, q: mdla_ir.Graph, x: np.ndarray) -> str:
    """An a16 row's `emu ms` (emulated ms per image) and `emu ×` (its emulated CPU over the
    all-int8 twin's: `first`'s graph re-quantized without int16 and without AdaRound, whose
    weights do not change the time); dashes for a row without int16 tensors."""
    if not config.a16:
        return f" {'-':>6} {'-':>5}"
    from emulated import emulated

    plain = dataclasses.replace(
        first.config, a16=(), a16_gain_db=(), a16_mode="", adaround=0, method=config.method
    )
    lat = emulated(q, sweep(first, plain).qgraph, x)
    return f" {lat.ms:>6.3g} {lat.ratio:>4.2f}x"


def int16_share(graph: mdla_ir.Graph, names: tuple[str, ...]) -> float:
    """The share of `graph`'s activation elements that `names` hold in int16."""
    costs = tensor_costs(graph)
    return sum(costs[n].elements for n in names) / max(sum(c.elements for c in costs.values()), 1)


def _rate(k: int, n: int) -> str:
    """`k / n` as a percentage with its 95 % Wilson interval."""
    lo, hi = wilson(k, n)
    return f"{100 * k / max(n, 1):>5.1f}% [{lo * 100:4.1f}, {hi * 100:5.1f}]"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crops", type=int, default=200, help="held-out validation crops")
    parser.add_argument("--calib", type=int, default=32, help="calibration crops")
    parser.add_argument("--skip-torchvision", action="store_true")
    parser.add_argument(
        "--techniques",
        default="",
        help="only the weight-techniques table, for these comma-separated models "
        "(e.g. efficientnet_lite0,efficientnet_lite1,efficientnet_lite2)",
    )
    parser.add_argument("--adaround", type=int, default=300, help="AdaRound iterations/layer")
    parser.add_argument(
        "--methods", default=",".join(METHODS), help="the techniques table's calibration methods"
    )
    parser.add_argument(
        "--only",
        default=",".join(TECHNIQUES),
        help=f"the techniques table's techniques, of {', '.join(TECHNIQUES)}",
    )
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="the techniques table also gives each row's agreement with float weights at its "
        "int8 activation grids (those grids' own cost; ~1 min per row)",
    )
    parser.add_argument(
        "--check-ref",
        action="store_true",
        help="the techniques table checks every held-out input's emulator output against "
        "run_int8 byte for byte (default: the first 4, emulator_scores.CHECKED)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a brief techniques run: efficientnet_lite0, 60 held-out crops, 16 calibration "
        "crops, minmax, none vs CLE+AdaRound at 100 iterations",
    )
    parser.add_argument(
        "--held-out",
        choices=("harder", "crops"),
        default="harder",
        help="the techniques table's held-out set: harder inputs from 22 pictures, or part 1's "
        "crops of the 6 calibration photos",
    )
    parser.add_argument(
        "--mtcnn",
        action="store_true",
        help="the techniques table for MTCNN's P-, R- and O-Net (bench/accuracy_mtcnn.py): "
        "--calib calibration and --crops held-out face scenes, --only, --adaround",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    if args.quick:
        techniques(
            ["efficientnet_lite0"], 60, 16, 100, "crops", ["minmax"], ["none", "CLE+AdaRound"]
        )
        return
    if args.mtcnn:
        from accuracy_mtcnn import MAX_CALIB, mtcnn_table

        unknown = [t for t in args.only.split(",") if t not in TECHNIQUES]
        if unknown:
            parser.error(f"unknown technique(s) {unknown}: expected some of {list(TECHNIQUES)}")
        if not 1 <= args.calib <= MAX_CALIB or args.crops < 1:
            parser.error(f"--mtcnn needs 1..{MAX_CALIB} --calib scenes and at least 1 --crops")
        mtcnn_table(args.calib, args.crops, args.adaround, args.only.split(","))
        return
    if args.techniques:
        unknown = [t for t in args.only.split(",") if t not in TECHNIQUES]
        if unknown:
            parser.error(f"unknown technique(s) {unknown}: expected some of {list(TECHNIQUES)}")
        unknown = [m for m in args.methods.split(",") if m not in METHODS]
        if unknown:
            parser.error(f"unknown method(s) {unknown}: expected some of {list(METHODS)}")
        techniques(
            args.techniques.split(","),
            args.crops,
            args.calib,
            args.adaround,
            args.held_out,
            args.methods.split(","),
            args.only.split(","),
            args.ceiling,
            args.check_ref,
        )
        return
    lite0(args.crops, args.calib)
    if not args.skip_torchvision:
        torchvision_models()


if __name__ == "__main__":
    main()
