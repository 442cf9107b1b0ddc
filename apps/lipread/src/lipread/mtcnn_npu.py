"""MTCNN's P/R/O-Nets compiled through the pipeline and run on a target (`--roi auto`).

    compile (once per detection frame size; cached in lipread's cache directory):
      P-Net: ONE graph over the whole pyramid of that frame size (one input and two outputs
             per level, the net's weights repeated per level): a detection is one engine call
             for all levels, not one per level
      R-Net: batch RNET_BATCH (candidates padded to it, chunked beyond)
      O-Net: batch ONET_BATCH (the same)
      each: mdla_ir.from_torch -> mdla_legalize (mdla3.5) -> mdla_quant (minmax ranges,
      calibrated on rendered face frames and jittered crops around their faces) -> .mdla
    run:  `lipread.mtcnn.detect_faces` with these nets on mtk-mdla

Why one graph per pyramid rather than per level or a fixed set of sizes: every call to the
engine costs ~50 ms of process start on this machine (the nets themselves run in ~1-20 ms),
and a video has one frame size, so its pyramid is fixed: one compile (~seconds) per video
size, then three calls per detection. A fixed set of sizes would need letterboxing (work on
padding) or resampling the frame to a size the detector was not asked about.

Tracking (`track_batched`): the same engine cost rules out the float tracker's per-frame O-Net
call. The whole clip is decoded before tracking, so keyframes (every KEYFRAME frames) are
detected first; each frame between two keyframes with faces starts from the box linearly
interpolated between them, and O-Net runs on all such frames at once; frames it loses restart
from the nearest tracked frame's box in further batched rounds, and a last round refines every
frame from its own box (`track_batched`). A frame still lost is detected on its own; where that
fails it stays NaN (gaps are `roi.boxes_from_corners`'s).
The float path (`lipread.track.MtcnnDetector` with `track_corners`) is the reference;
`tests/lipread/test_mtcnn.py` compares the two.
"""

from __future__ import annotations

import importlib.metadata
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from lipread.errors import DeviceError, LipreadError, MissingDependencyError, UnsupportedError
from lipread.frontend import cache_dir
from lipread.image import resize
from lipread.mtcnn import Nets, area_resize, detect_faces, net_input, pyramid, refine_crop
from lipread.track import DETECT_SIDE, FACE_P, KEYFRAME, Face, Report, no_report, square
from mdla_ir.devices import DEFAULT_TARGET, NPU
from mdla_runtime.interrupt import check

Array = np.ndarray[Any, Any]
RNET_BATCH = 64
ONET_BATCH = 150
VERSION = 3  # 2: O-Net calibrated on CROP_SCENES scenes' crops; 3: its box head int16
CALIB_FRAMES = 4  # P-Net: frames (each at every pyramid level); R-Net: their crops
CROP_SCENES = 32  # O-Net: 8 crops a scene (fewer where refine_crop refuses one)


def _facenet_version() -> str:
    try:
        return importlib.metadata.version("facenet-pytorch")
    except importlib.metadata.PackageNotFoundError:
        return "none"


def cache_paths(size: tuple[int, int]) -> dict[str, Path]:
    """The three manifests for detection frames of `size` (H, W)."""
    key = f"mtcnn-{_facenet_version()}-v{VERSION}"
    h, w = size
    return {
        "pnet": cache_dir() / f"{key}.pnet-{h}x{w}.mdla",
        "rnet": cache_dir() / f"{key}.rnet-b{RNET_BATCH}.mdla",
        "onet": cache_dir() / f"{key}.onet-b{ONET_BATCH}.mdla",
    }


def detect_size(h: int, w: int) -> tuple[int, int]:
    """The size frames are downscaled to before detection (longest side <= DETECT_SIDE)."""
    scale = min(1.0, DETECT_SIDE / max(h, w))
    return (round(h * scale), round(w * scale)) if scale < 1.0 else (h, w)


def float_modules() -> tuple[Any, Any, Any]:
    """facenet-pytorch's P-, R- and O-Net with the weights in its wheel (needs torch)."""
    try:
        importlib.import_module("facenet_pytorch")  # the package first: it may be blocked
        nets = importlib.import_module("facenet_pytorch.models.mtcnn")
    except ModuleNotFoundError as exc:
        raise MissingDependencyError(
            "compiling MTCNN for --roi auto needs facenet-pytorch 2.5.3 (its wheel holds the "
            "weights) with torch: pip install 'mdla-lipread[auto]'; or pass --roi X,Y,W,H"
        ) from exc
    return tuple(getattr(nets, n)(pretrained=True).eval() for n in ("PNet", "RNet", "ONet"))


def float_nets() -> Nets:
    """The reference: the three nets in torch float32."""
    pnet, rnet, onet = float_modules()  # first: without torch it says what --roi auto needs
    import torch

    def run(module: Any, x: Array) -> tuple[Array, ...]:
        with torch.no_grad():
            return tuple(o.numpy() for o in module(torch.from_numpy(x)))

    def levels(xs: list[Array]) -> list[tuple[Array, Array]]:
        return [run(pnet, x) for x in xs]  # type: ignore[misc]

    return Nets(levels, lambda x: run(rnet, x), lambda x: run(onet, x))  # type: ignore[arg-type,return-value]


def face_crops(frame: Array, face: Array, rng: np.random.Generator) -> list[tuple[Array, bool]]:
    """Eight square crops of `frame` (H, W, 3) as O-Net takes them, (1, 3, 48, 48), each with
    whether it is on the face: six jittered around `face` (x1, y1, x2, y2; side x0.8-1.3, centre
    +-15 %), two anywhere (side 20-60 % of the frame). Crops `refine_crop` refuses are left out.
    The calibration set below and bench/accuracy_mtcnn.py's held-out set are drawn by it."""
    fh, fw = frame.shape[:2]
    x1, y1, x2, y2 = face
    out = []
    for j in range(8):
        if j < 6:
            side = max(x2 - x1, y2 - y1) * rng.uniform(0.8, 1.3)
            cx = (x1 + x2) / 2 + rng.uniform(-0.15, 0.15) * side
            cy = (y1 + y2) / 2 + rng.uniform(-0.15, 0.15) * side
        else:
            side = rng.uniform(0.2, 0.6) * min(fh, fw)
            cx, cy = rng.uniform(side / 2, fw - side / 2), rng.uniform(side / 2, fh - side / 2)
        box = np.array([cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2])
        crop = refine_crop(frame, box)
        if crop is not None:
            out.append((crop, j < 6))
    return out


def rnet_input(crop: Array) -> Array:
    """An O-Net crop (1, 3, 48, 48) as R-Net's (3, 24, 24) input: back to pixels, area-resized."""
    patch = crop[0].transpose(1, 2, 0) / np.float32(0.0078125) + np.float32(127.5)
    out: Array = net_input(area_resize(patch, (24, 24))[None])[0]
    return out


def _calibration(size: tuple[int, int]) -> tuple[list[Array], list[Array], list[Array]]:
    """Rendered face frames at `size` (H, W) RGB (CALIB_FRAMES scenes), and 24x24 / 48x48 net
    inputs: jittered square crops around each frame's face (faces as R- and O-Net see them)
    and off-face crops, R-Net's from the CALIB_FRAMES scenes, O-Net's from CROP_SCENES. O-Net's
    box regression needs the many crops: the offsets of 32 crops spanned [-0.29, 0.32] of the
    [-0.73, 0.47] that held-out crops reach, and its int8 output grid clipped the rest (box SQNR
    against FP32 on held-out scenes: 14.4 dB from 32 crops, 24.3 dB from 256; bench/accuracy.py
    --mtcnn; the rest is the int8 grids of its last layers, `box_head`). R-Net keeps its 32:
    its boxes only seed O-Net's crops, and its wider grid from 256 crops lowered the cascade's
    box IoU on tests/lipread/test_mtcnn.py's astronaut (min 0.893 -> 0.841 with O-Net's 256)
    though its own held-out box SQNR rose (19.0 -> 23.0 dB)."""
    from lipread.render import spoken_sentence
    from lipread.scenes import LEVELS, render_scene

    rng = np.random.default_rng(0x3C7)
    frames, r_in, o_in = [], [], []
    for k in range(CROP_SCENES):
        scene = render_scene(spoken_sentence(7000 + k, 0), 7000 + k, 0, LEVELS["face"], frames=3)
        frame = scene.frames[0]
        if k < CALIB_FRAMES:
            frames.append(np.clip(resize(frame[None], size)[0], 0, 255))
        for crop, _ in face_crops(frame, np.asarray(scene.faces[0]), rng):
            o_in.append(crop[0])
            if k < CALIB_FRAMES:
                r_in.append(rnet_input(crop))
    return frames, r_in, o_in


def _batches(xs: list[Array], batch: int) -> list[list[Array]]:
    """`xs` stacked into calibration batches of `batch` (one input each); the last batch is
    filled up with the first inputs again, so every input is seen and the shape is fixed."""
    stacked = np.stack(xs)
    count = -(-len(stacked) // batch)
    reps = -(-count * batch // len(stacked))
    tiled = np.concatenate([stacked] * reps)[: count * batch]
    return [[tiled[i * batch : (i + 1) * batch]] for i in range(count)]


def compile_mtcnn(size: tuple[int, int], report: Report = no_report) -> dict[str, Path]:
    """Compile (or find cached) the three nets for detection frames of `size`;
    `report("compiling MTCNN", k, 3)` as each is done."""
    paths = cache_paths(size)
    if all(p.is_file() for p in paths.values()):
        return paths
    import mdla_runtime

    report("compiling MTCNN", 0, len(paths))
    for k, (name, module, calib) in enumerate(mtcnn_jobs(size)):
        if paths[name].is_file():
            continue
        qgraph = quantized(name, module, calib)
        report("compiling MTCNN", k + 1, len(paths))
        try:
            paths[name].parent.mkdir(parents=True, exist_ok=True)
            check()  # a Ctrl-C remembered during the compile's imports: no cache entry
            mdla_runtime.save(qgraph, paths[name])
        except (mdla_runtime.ManifestError, mdla_runtime.LoweringError) as exc:
            raise LipreadError(f"MTCNN {name}: writing {paths[name]} failed: {exc}") from exc
    return paths


def mtcnn_jobs(size: tuple[int, int]) -> list[tuple[str, Any, list[list[Array]]]]:
    """(name, torch module, calibration inputs) of the three nets for frames of `size`."""
    pnet, rnet, onet = float_modules()  # first: without torch it says what --roi auto needs
    frames, r_in, o_in = _calibration(size)
    levels = [s for _, s in pyramid(*size)]
    if not levels:
        raise UnsupportedError(f"frames of {size[1]}x{size[0]} are too small for MTCNN")

    p_calib = [[net_input(area_resize(f, s)[None]) for s in levels] for f in frames]
    return [
        ("pnet", pyramid_module(pnet, len(levels)), p_calib),
        ("rnet", rnet, _batches(r_in, RNET_BATCH)),
        ("onet", onet, _batches(o_in, ONET_BATCH)),
    ]


def pyramid_module(pnet: Any, levels: int) -> Any:
    """P-Net on each of `levels` pyramid levels as ONE module of fixed arity: inputs
    x0..x{levels-1}, outputs reg0, prob0, reg1, prob1, ... (in eval mode).

    torch.fx traces a forward of named tensor arguments but not `*args`, and the level count
    is the frame size's. So the module is built as a torch.fx graph: one placeholder per level,
    a call of the shared P-Net submodule `net` on each, and each call's two outputs taken by
    index. Its forward is P-Net applied per level and nothing else (the same submodule and
    weights, no arithmetic between), so it is exact: `tests/lipread/test_mtcnn.py` compares it
    with `pnet(x_i)` level by level and imports it with `mdla_ir.from_torch`."""
    import torch
    from torch import fx

    if levels < 1:
        raise UnsupportedError(f"a P-Net pyramid needs at least one level, got {levels}")
    root = torch.nn.Module()
    root.net = pnet
    graph = fx.Graph()
    inputs = [graph.placeholder(f"x{i}") for i in range(levels)]
    outputs = []
    for x in inputs:
        both = graph.call_module("net", (x,))
        outputs += [graph.call_function(operator.getitem, (both, k)) for k in (0, 1)]
    graph.output(tuple(outputs))
    return fx.GraphModule(root, graph, "MtcnnPyramid").eval()


def quantized(name: str, module: Any, calib: list[list[Array]]) -> Any:
    """One net through from_torch -> legalize (mdla3.5) -> quantize (minmax ranges: on the
    astronaut clip of tests/lipread/test_mtcnn.py, 8 frames, the largest face's box IoU against
    the float cascade was min 0.872 / mean 0.910 with minmax, 0.849 / 0.901 with percentile
    99.99; landmarks within 3.1% of the face width with either)."""
    import torch

    import mdla_ir
    import mdla_legalize
    import mdla_quant

    try:
        example = tuple(torch.from_numpy(x) for x in calib[0])
        graph = mdla_ir.from_torch(module, example, name=f"mtcnn_{name}")
        legal = mdla_legalize.legalize(graph, mdla_legalize.load_target(DEFAULT_TARGET))
        a16 = box_head(legal) if name == "onet" else ()
        return mdla_quant.quantize(legal, calib, mdla_quant.QuantConfig(method="minmax", a16=a16))
    except (mdla_ir.IRError, mdla_legalize.LegalizeError) as exc:
        raise UnsupportedError(f"MTCNN {name} does not compile for mtk-mdla: {exc}") from exc
    except mdla_quant.QuantError as exc:
        raise LipreadError(f"MTCNN {name} INT8 compile failed: {exc}") from exc


def box_head(graph: Any, weighted: int = 2) -> tuple[str, ...]:
    """O-Net's box regression head, held in int16 (`QuantConfig.a16`, 16x8): the 4-wide graph
    output back through its producers to the output of the `weighted`-th conv / FC (dense6_2,
    then dense5; the PRELU and RESHAPEs between). With the box head in int8, the int8 grids of
    those last layers, not the output range, held the box SQNR against FP32 on held-out scenes
    at 24.3 dB (bench/accuracy.py --mtcnn); int16 there gives 27.0 dB, the face call unchanged."""
    producer = {op.outputs[0]: op for op in graph.ops}
    (box,) = [n for n in graph.outputs if graph.tensors[n].shape[-1] == 4]
    names, found, name = [], 0, box
    while found < weighted and name in producer:
        op = producer[name]
        names.append(name)
        found += op.kind.name in ("CONV_2D", "FULLY_CONNECTED")
        name = op.inputs[0]
    return tuple(reversed(names))


def npu_nets(
    size: tuple[int, int],
    spec: str,
    latencies: list[float] | None = None,
    report: Report = no_report,
) -> Nets:
    """The three compiled nets for detection frames of `size`, run on target `spec`;
    each call's device milliseconds are appended to `latencies`."""
    import mdla_runtime

    paths = compile_mtcnn(size, report)
    try:
        manifests = {k: mdla_runtime.load(p) for k, p in paths.items()}
        target = mdla_runtime.open_target(spec)
    except mdla_runtime.ManifestError as exc:
        raise LipreadError(f"MTCNN manifest: {exc}") from exc
    except mdla_runtime.TargetError as exc:
        raise DeviceError(str(exc)) from exc
    times = latencies if latencies is not None else []

    def run(name: str, xs: list[Array]) -> list[Array]:
        try:
            result = target.run(manifests[name], xs, devices=(NPU,))
        except mdla_runtime.TargetError as exc:
            raise DeviceError(f"MTCNN {name} on {spec}: {exc}") from exc
        times.append(result.latency_ms[0])
        return [np.asarray(o, np.float32) for o in result.outputs]

    def levels(xs: list[Array]) -> list[tuple[Array, Array]]:
        out = run("pnet", xs)
        return [(out[2 * i], out[2 * i + 1]) for i in range(len(xs))]

    def batched(name: str, batch: int) -> Callable[[Array], tuple[Array, ...]]:
        def fn(x: Array) -> tuple[Array, ...]:
            n = len(x)
            parts: list[list[Array]] = []
            for start in range(0, max(n, 1), batch):
                chunk = x[start : start + batch]
                pad = np.zeros((batch - len(chunk), *x.shape[1:]), np.float32)
                parts.append([o[: len(chunk)] for o in run(name, [np.concatenate([chunk, pad])])])
            return tuple(np.concatenate(col) for col in zip(*parts, strict=True))

        return fn

    return Nets(levels, batched("rnet", RNET_BATCH), batched("onet", ONET_BATCH))  # type: ignore[arg-type]


class CascadeDetector:
    """A `lipread.track.Detector` over `Nets` (numpy cascade), detecting on the frame
    downscaled to DETECT_SIDE like `MtcnnDetector`; `refine_many` runs O-Net on many boxes."""

    def __init__(self, nets: Nets, size: tuple[int, int]) -> None:
        self.nets, self.size = nets, size

    def detect(self, frame: Array) -> Face | None:
        h, w = frame.shape[:2]
        small = frame if (h, w) == self.size else np.clip(resize(frame[None], self.size)[0], 0, 255)
        boxes, points = detect_faces(small, self.nets)
        if not len(boxes):
            return None
        sy, sx = h / self.size[0], w / self.size[1]
        scale = np.array([sx, sy, sx, sy])
        return Face(boxes[0, :4] * scale, points[0, 3:5] * np.array([sx, sy]))

    def refine(self, frame: Array, box: Array) -> Face | None:
        return self.refine_many([frame], [box])[0]

    def refine_many(self, frames: list[Array], boxes: list[Array]) -> list[Face | None]:
        """O-Net on each (frame, box) in one batched call; None where it says no face."""
        crops = [refine_crop(f, b) for f, b in zip(frames, boxes, strict=True)]
        ok = [i for i, c in enumerate(crops) if c is not None]
        out: list[Face | None] = [None] * len(frames)
        if not ok:
            return out
        reg, pts, prob = self.nets.onet(np.concatenate([crops[i] for i in ok]))
        for j, i in enumerate(ok):
            if float(prob[j, 1]) < FACE_P:
                continue
            x1, y1, x2, y2 = (round(float(v)) for v in boxes[i])
            bw, bh = x2 - x1, y2 - y1
            r, p = reg[j].astype(np.float64), pts[j].astype(np.float64)
            face = np.array([x1 + r[0] * bw, y1 + r[1] * bh, x2 + r[2] * bw, y2 + r[3] * bh])
            out[i] = Face(face, np.stack([x1 + bw * p[3:5], y1 + bh * p[8:10]], axis=1))
        return out


def track_batched(
    frames: Array, detector: CascadeDetector, every: int = KEYFRAME, report: Report = no_report
) -> Array:
    """Mouth corners (T, 2, 2) for frames (T, H, W, 3), NaN where no face was found.

    Keyframes are detected; every other frame starts from the box interpolated between the
    keyframes around it, and O-Net runs on all of them in one batched call. Frames it loses
    (the head moved off the straight line) restart from the box of the nearest frame tracked
    so far, in further batched rounds while a round recovers any frame; then one last round
    refines every tracked frame from its own box. What is still lost is detected alone.

    `report(phase, done, total)` after each detection and each O-Net call (ONET_BATCH frames:
    the chunks `npu_nets` would cut the round into anyway, so the calls are the same)."""
    total = len(frames)
    out = np.full((total, 2, 2), np.nan)
    tracked: dict[int, Array] = {}  # frame -> its face's square box
    keyframes = sorted({*range(0, total, every), total - 1})
    for k, t in enumerate(keyframes):
        face = detector.detect(frames[t])
        report("detecting keyframes", k + 1, len(keyframes))
        if face is not None:
            out[t] = face.corners
            tracked[t] = square(face.box)
    if not tracked:
        return out  # no keyframe has a face: `roi.boxes_from_corners` names the frames
    keys = np.array(sorted(tracked))
    todo = [t for t in range(total) if t not in tracked]
    starts: dict[int, Array] = {}
    for t in todo:
        i = int(np.searchsorted(keys, t))
        a, b = keys[max(i - 1, 0)], keys[min(i, len(keys) - 1)]
        u = (t - a) / (b - a) if b != a else 0.0
        starts[t] = tracked[int(a)] + (tracked[int(b)] - tracked[int(a)]) * u

    def refine(ts: list[int], phase: str) -> list[int]:
        """O-Net on ts from their starts, ONET_BATCH frames a call; the frames it tracked."""
        faces: list[Face | None] = []
        for start in range(0, len(ts), ONET_BATCH):
            part = ts[start : start + ONET_BATCH]
            faces += detector.refine_many([frames[t] for t in part], [starts[t] for t in part])
            report(phase, len(faces), len(ts))
        done = []
        for t, face in zip(ts, faces, strict=True):
            if face is not None:
                out[t] = face.corners
                tracked[t] = square(face.box)
                done.append(t)
        return done

    first = set(refine(todo, "tracking frames"))
    lost = [t for t in todo if t not in first]
    rounds = 0
    while lost:
        known = np.array(sorted(tracked))
        for t in lost:
            starts[t] = tracked[int(known[np.abs(known - t).argmin()])]
        rounds += 1
        recovered = set(refine(lost, f"recovering lost frames, round {rounds}"))
        if not recovered:
            break
        lost = [t for t in lost if t not in recovered]
    again = [t for t in todo if t in tracked]
    for t in again:
        starts[t] = tracked[t]
    if again:  # from each frame's own box: re-centred, as the float tracker's refine
        refine(again, "re-centring frames")
    for k, t in enumerate(lost):  # O-Net cannot follow: a full detection on this frame alone
        face = detector.detect(frames[t])
        report("detecting lost frames", k + 1, len(lost))
        if face is not None:
            out[t] = face.corners
    return out


def npu_corners(spec: str, report: Report = no_report) -> Callable[[Array], Array]:
    """A `roi.CornerFinder` running MTCNN's nets on target `spec`, reporting its progress."""

    def find(frames: Array) -> Array:
        size = detect_size(*frames.shape[1:3])
        nets = npu_nets(size, spec, report=report)
        return track_batched(frames, CascadeDetector(nets, size), report=report)

    return find
