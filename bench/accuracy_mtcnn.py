"""INT8 vs FP32 of MTCNN's real-weight nets per weight technique (issue 20's evaluation set).

The EfficientNet-Lite table of `accuracy.techniques` judges a classifier by its top-1; MTCNN's
nets are judged by what the cascade reads from them: the face / non-face decision (argmax of
the two-way softmax, i.e. p_face >= 0.5; and p_face against the cascade's own thresholds
`lipread.mtcnn.THRESHOLDS`), the box regression and O-Net's landmarks (SQNR against FP32).

Inputs are made the way `lipread.mtcnn_npu._calibration` makes the app's calibration set:
rendered full-face scenes (`lipread.scenes`, level `face`), frame 0 of each resized to P-Net's
compiled 48x64, and per frame 8 square crops (6 jittered around the face, 2 anywhere in the
frame) as O-Net (48x48, `refine_crop`) and R-Net (24x24, `area_resize` of that) see them.
Calibration uses speakers 7000.. with the app's crop seed: O-Net is calibrated on all crops of
the n_calib scenes, R-Net on the first n_calib crops (with --calib 32, `CROP_SCENES`, both are
the app's own calibration sets); P-Net on all n_calib frames, where the app uses its 4 frames
at each pyramid level. Held-out inputs use speakers 7500.. and another crop seed, so no scene
is shared. Every net is quantized with minmax ranges, and O-Net with its box head int16
(`lipread.mtcnn_npu.box_head`), as the app does.

    .venv/bin/python bench/accuracy.py --mtcnn [--calib 32] [--crops 200] [--adaround 300] \
        [--only none,CLE+AdaRound,CLE+Ada+block]
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accuracy import (  # the sibling script: this folder is on sys.path
    _rate,
    compile_first,
    setting_of,
    sweep,
)

import mdla_ir
from mdla_quant import run_int8
from mdla_quant.block_reconstruction import find_blocks
from mdla_zoo import load_model
from workbench.output import each as bench_progress

# This folder's bench/lipread.py shadows the `lipread` package: import it without the folder.
_PATH = list(sys.path)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
from lipread.image import resize  # noqa: E402
from lipread.mtcnn import THRESHOLDS, net_input  # noqa: E402
from lipread.mtcnn_npu import box_head, face_crops, rnet_input  # noqa: E402
from lipread.render import spoken_sentence  # noqa: E402
from lipread.scenes import LEVELS, render_scene  # noqa: E402

sys.path[:] = _PATH

Array = np.ndarray[Any, Any]
CALIB_SPEAKER, CALIB_SEED = 7000, 0x3C7  # lipread.mtcnn_npu._calibration's
HELD_SPEAKER, HELD_SEED = 7500, 0x3C8
MAX_CALIB = HELD_SPEAKER - CALIB_SPEAKER  # calibration scenes before the held-out speakers
PNET_SIZE = (48, 64)  # mdla_zoo.MTCNN_SIZES["mtcnn_pnet"]: one pyramid level of a 64x48 frame
DECIDED = 0.05  # FP32 decides an input when |p_face - 0.5| >= this
METHOD = "minmax"  # lipread.mtcnn_npu.quantized's


@dataclass(frozen=True, slots=True)
class FaceSet:
    """Net inputs from rendered face scenes, each (1, 3, h, w) float32 as MTCNN feeds them."""

    speakers: list[int]  # one scene per speaker
    frames: list[Array]  # P-Net inputs: frame 0 of each scene at PNET_SIZE
    onet: list[Array]  # 48x48 crops, all scenes' in order
    rnet: list[Array]  # the same crops at 24x24
    on_face: list[bool]  # crop k was jittered around the face (else anywhere in the frame)


def face_set(first_speaker: int, scenes: int, seed: int) -> FaceSet:
    """`scenes` rendered face scenes (speakers first_speaker..) and their crops, drawn as
    `lipread.mtcnn_npu._calibration` draws them (the same rng calls in the same order, so
    speaker 7000 and seed 0x3C7 repeat its inputs); crops under MIN_FACE are skipped."""
    rng = np.random.default_rng(seed)
    out = FaceSet([], [], [], [], [])
    for speaker in range(first_speaker, first_speaker + scenes):
        scene = render_scene(spoken_sentence(speaker, 0), speaker, 0, LEVELS["face"], frames=3)
        frame = scene.frames[0]
        small = np.clip(resize(frame[None], PNET_SIZE)[0], 0, 255)
        out.speakers.append(speaker)
        out.frames.append(net_input(small[None]))
        for crop, on_face in face_crops(frame, np.asarray(scene.faces[0]), rng):
            out.onet.append(crop)
            out.rnet.append(rnet_input(crop)[None])
            out.on_face.append(on_face)
    return out


def inputs(n_calib: int, n_held: int) -> tuple[FaceSet, FaceSet]:
    """Calibration (n_calib scenes: n_calib frames and all their crops) and held-out
    (n_held scenes) sets; their speaker ranges must not meet."""
    if not 1 <= n_calib <= MAX_CALIB:
        raise ValueError(
            f"{n_calib} calibration scenes: need 1..{MAX_CALIB} (more would reach the held-out "
            f"speakers {HELD_SPEAKER}..)"
        )
    return face_set(CALIB_SPEAKER, n_calib, CALIB_SEED), face_set(HELD_SPEAKER, n_held, HELD_SEED)


def roles(graph: mdla_ir.Graph, outs: list[Array]) -> dict[str, int]:
    """Which graph output is what: `prob` the SOFTMAX one, `box` the 4-channel regression,
    `landmarks` the 10-channel one (O-Net), by producer and by the channels of its value in
    `outs` (one run_float: NCHW for P-Net, (N, C) else), not by position."""
    producer = {op.outputs[0]: op for op in graph.ops}
    found: dict[str, int] = {}
    for k, name in enumerate(graph.outputs):
        width = outs[k].shape[1]
        role = (
            "prob"
            if producer[name].kind.name == "SOFTMAX"
            else {4: "box", 10: "landmarks"}.get(width, name)
        )
        found[role] = k
    if "prob" not in found or "box" not in found:
        raise RuntimeError(f"{graph.name}: outputs {graph.outputs} lack a softmax or a 4-wide box")
    return found


def check_order(module: Any, graph: mdla_ir.Graph, x: Array) -> None:
    """run_float's outputs are the torch module's tuple in its order (each equal to float
    tolerance): so `roles`' names, read off the graph, name the module's outputs too."""
    with torch.no_grad():
        ref = [o.numpy() for o in module(torch.from_numpy(x))]
    got = mdla_ir.run_float(graph, [x])
    if len(ref) != len(got):
        raise RuntimeError(f"{graph.name}: {len(got)} graph outputs, the module has {len(ref)}")
    for k, (r, g) in enumerate(zip(ref, got, strict=True)):
        if r.shape != g.shape or not np.allclose(r, g, atol=1e-4):
            raise RuntimeError(
                f"{graph.name}: graph output {k} ({graph.outputs[k]}) is not the module's "
                f"output {k}"
            )


def rows(outs: list[Array]) -> Array:
    """Per-decision rows of one output over all inputs: (N, C) as is, (N, C, H, W) cell by
    cell, (N*H*W, C): the order `_face_p` gives each decision's face probability in."""
    return np.concatenate([np.moveaxis(o, 1, -1).reshape(-1, o.shape[1]) for o in outs])


def sqnr(ref: Array, test: Array) -> float:
    """10 log10(sum ref^2 / sum (test - ref)^2), in float64."""
    ref, test = ref.astype(np.float64), test.astype(np.float64)
    noise = float(((test - ref) ** 2).sum())
    return float(10 * np.log10(float((ref**2).sum()) / noise)) if noise > 0 else float("inf")


def _face_p(prob: Array) -> Array:
    """Face probability per decision: (N, 2) -> (N,), (N, 2, H, W) -> every cell."""
    return np.asarray(prob[:, 1], np.float64).ravel()


def mtcnn_table(n_calib: int, n_held: int, iters: int, techniques: list[str]) -> None:
    """Per net (P-Net on frames, R-Net, O-Net on crops) and technique: face-decision agreement
    with FP32 on the held-out inputs FP32 decides and on all, each with its 95 % Wilson
    interval; agreement at the cascade's threshold; SQNR of the box regression (and O-Net's
    landmarks); compile (quantize) time. After each net: whether `CLE+Ada+block` gave the same
    int8 weights as `CLE+AdaRound` (MTCNN has no depthwise conv, so no block to refine)."""
    calib, held = inputs(n_calib, n_held)
    n_off = sum(not f for f in held.on_face[:n_held])
    print(
        f"\nMTCNN (facenet-pytorch weights), {METHOD} ranges; calibration {n_calib} scenes "
        f"(speakers {CALIB_SPEAKER}..): {n_calib} frames, {min(n_calib, len(calib.rnet))} R-Net "
        f"and {len(calib.onet)} O-Net crops; "
        f"held out {n_held} other scenes (speakers {HELD_SPEAKER}..): {n_held} frames, "
        f"{min(n_held, len(held.onet))} crops ({n_off} off-face); AdaRound {iters} iterations "
        "per layer\n"
    )
    print(
        f"{'net':<6} {'technique':<13} {'decided (95% CI)':>30} {'all (95% CI)':>22} "
        f"{'at thr':>7} {'box dB':>7} {'(faces)':>7} {'lmk dB':>7} {'(faces)':>7} {'compile s':>9}"
    )
    jobs = [
        ("P-Net", "mtcnn_pnet", calib.frames, held.frames, THRESHOLDS[0]),
        ("R-Net", "mtcnn_rnet", calib.rnet[:n_calib], held.rnet[:n_held], THRESHOLDS[1]),
        ("O-Net", "mtcnn_onet", calib.onet, held.onet[:n_held], THRESHOLDS[2]),
    ]
    notes = []
    for label, spec, cal, val, thr in bench_progress(jobs, "nets"):
        model = load_model(spec)
        calib_inputs = [[x] for x in cal]
        first = compile_first(model, calib_inputs, setting_of(METHOD, techniques[0], iters))
        graph = first.device_graph
        fp32 = [mdla_ir.run_float(graph, [x]) for x in val]
        found = roles(graph, fp32[0])
        check_order(model.module, graph, val[0])
        p32 = np.concatenate([_face_p(o[found["prob"]]) for o in fp32])
        decided = np.abs(p32 - 0.5) >= DECIDED
        face = p32 >= 0.5
        made: dict[str, list[Array]] = {}
        clipping = ""
        for name in techniques:
            config = setting_of(METHOD, name, iters)
            if label == "O-Net":  # the app's: its box head int16 (`mtcnn_npu.box_head`)
                config = dataclasses.replace(config, a16=box_head(graph))
            setting = sweep(first, config)
            q, t_q = setting.qgraph, setting.seconds["quantize"]
            made[name] = [np.asarray(t.data) for t in q.tensors.values() if t.data is not None]
            if name == techniques[0]:
                clipping = _clipping(q, graph, found, fp32)
            int8 = [run_int8(q, [x]) for x in val]
            p8 = np.concatenate([_face_p(o[found["prob"]]) for o in int8])
            same = (p8 >= 0.5) == (p32 >= 0.5)
            at_thr = float(((p8 >= thr) == (p32 >= thr)).mean())
            dbs = ""
            for role in ("box", "landmarks"):
                if role not in found:
                    dbs += f" {'-':>7} {'-':>7}"
                    continue
                ref, test = (rows([o[found[role]] for o in outs]) for outs in (fp32, int8))
                dbs += f" {sqnr(ref, test):>7.1f} {sqnr(ref[face], test[face]):>7.1f}"
            k_d, n_d = int(same[decided].sum()), int(decided.sum())
            print(
                f"{label:<6} {name:<13} {_rate(k_d, n_d)} of {n_d:>6} "
                f"{_rate(int(same.sum()), len(same))} {100 * at_thr:>6.1f}%{dbs} {t_q:>9.1f}",
                flush=True,
            )
        faces = int(face.sum())
        notes.append(
            f"{label}: {len(p32)} decisions ({len(p32) // len(val)} per input, {len(val)} "
            f"inputs), FP32 says face on {faces}; {len(find_blocks(graph))} "
            "inverted-residual blocks" + _block_note(made) + clipping
        )
    print(
        f"\n(decided: FP32's |p_face - 0.5| >= {DECIDED}; agreement: int8 and FP32 on the same "
        f"side of p_face = 0.5; at thr: the same side of the cascade's threshold "
        f"{'/'.join(map(str, THRESHOLDS))} for P/R/O; P-Net decides per output cell, "
        "overlapping cells of a frame, so its intervals treat dependent decisions as independent; "
        "dB: SQNR against FP32 on all decisions and (faces) on those FP32 calls a face)"
    )
    for note in notes:
        print(note)


def _clipping(
    q: mdla_ir.Graph, graph: mdla_ir.Graph, found: dict[str, int], fp32: list[list[Array]]
) -> str:
    """How much of FP32's box (and landmark) output on the held-out inputs lies outside the
    range of its int8 output grid (set by calibration), and the SQNR that clipping alone leaves:
    a bound no weight technique can pass, as they keep the ranges."""
    out = ""
    for role in ("box", "landmarks"):
        if role not in found:
            continue
        quant = q.tensors[graph.outputs[found[role]]].quant
        if quant is None:
            continue
        scale, zero = float(quant.scale[0]), int(quant.zero_point[0])
        bits = 16 if q.tensors[graph.outputs[found[role]]].dtype == "int16" else 8
        lo, hi = scale * (-(2 ** (bits - 1)) - zero), scale * (2 ** (bits - 1) - 1 - zero)
        ref = rows([o[found[role]] for o in fp32])
        out += (
            f"; {int(((ref < lo) | (ref > hi)).sum())} of FP32's {ref.size} {role[:8]} values "
            f"outside the int{bits} output range [{lo:.3f}, {hi:.3f}] (FP32: [{ref.min():.3f}, "
            f"{ref.max():.3f}]; clipping to it alone: {sqnr(ref, np.clip(ref, lo, hi)):.1f} dB)"
        )
    return out


def _block_note(made: dict[str, list[Array]]) -> str:
    if "CLE+AdaRound" not in made or "CLE+Ada+block" not in made:
        return ""
    same = all(
        np.array_equal(a, b)
        for a, b in zip(made["CLE+AdaRound"], made["CLE+Ada+block"], strict=True)
    )
    return f"; CLE+Ada+block's int8 constants {'equal' if same else 'differ from'} CLE+AdaRound's"
