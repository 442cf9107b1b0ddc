"""lipread benchmark (issue 8): accuracy of the INT8 NPU path and the timings.

1. WER/CER on held-out synthetic GRID clips (speakers 100000.., never used in training or
   calibration) with the shipped demo model: FP32 (torch), INT8 reference (mdla_quant.run_int8)
   and INT8 on the emulator (mdla_runtime, every op on mtk-mdla). The front-end varies; the
   tail is the same numpy GRU/CTC for the INT8 paths and torch for FP32. A fourth row is the
   whole app: each clip written as H.264 mp4, then `read_sentence` (PyAV decode, resize,
   emulator, numpy tail), i.e. what `lipread clip.mp4` prints.
2. The full-size LipNet (published shapes, random weights, seed 0) on a synthetic 64x128 clip:
   NPU-path (emulator) front-end features vs FP32 torch, cosine and SQNR; ms/frame on the
   emulator; end-to-end seconds of the whole app on a 3 s clip.
3. Demo front-end ms/frame on the emulator; end-to-end seconds for a 3 s clip (`read_sentence`
   on a shipped sample: PyAV decode, crop, front-end on the emulator, numpy tail).
4. Issue 22: WER/CER per difficulty level of `lipread.scenes` (easy = the training corpus;
   medium, hard: head pose, scale, jitter, lighting, blur, H.264 compression; face: full-face
   frames) for the front-end in FP32 (torch) and INT8 (emulator), the same numpy tail, and
   the mean confidence. Each clip is written as H.264 at the level's crf and decoded back.
   The face level is read with the mouth box known to the renderer and with `--roi auto`.
5. Issue 22: end-to-end seconds of `lipread` on a 30 s 640x360 clip of a face (the astronaut
   photo moving) with --roi auto, and the pre-tracker way (MTCNN on every full frame, batches
   of 16) timed on its first 3 s and scaled by 10.

7. Issue 22: MTCNN's nets compiled for the NPU (lipread.mtcnn_npu), the detector `--roi auto`
   runs: its ms per detection and per tracked frame on the emulator, engine calls, the mouth
   boxes against the float tracker's (torch MTCNN) on the 30 s face clip, and end-to-end
   seconds of `read_sentence` on it with the detector's manifests compiled (cold) and cached.

6. Issue 22: the auto-avsr visual front-end (lipread.avsr), random weights (seed 0) with
   BatchNorm statistics from 9 synthetic clips, compiled for 25-frame windows and calibrated on
   every window of 12 75-frame clips: INT8 (emulator) vs FP32 feature cosine on held-out
   75-frame clips, emulator ms/frame (stem + trunk).

    .venv/bin/python bench/lipread.py [--clips 200] [--full-frames 75] [--level-clips 100]
                                      [--parts accuracy,full,timings,levels,roi,avsr,mtcnn]
"""

# ruff: noqa: E402  (the path fix below must run before `lipread` is imported)
from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path and its name shadows the
# `lipread` package: drop the folder.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import importlib
import os
import statistics
import tempfile
import time

import numpy as np
import torch

import mdla_quant
import mdla_runtime
from lipread.checkpoint import Checkpoint, load_checkpoint, save_npz
from lipread.confidence import path_confidence
from lipread.config import PUBLISHED
from lipread.errors import NoFaceError
from lipread.frontend import (
    cache_dir,
    cache_key,
    cached_manifest,
    compile_frontend,
    torch_frontend,
)
from lipread.grid import greedy_ctc, sentence_text
from lipread.image import crop, resize, to_model_input
from lipread.metrics import corpus_rate
from lipread.model import LipNet
from lipread.pipeline import read_sentence, synthetic_calibration
from lipread.render import render_clip, spoken_sentence
from lipread.roi import Roi, boxes_from_corners, mtcnn_corners
from lipread.scenes import LEVELS, render_scene
from lipread.tail import tail_logits
from lipread.video import read_video, write_video
from workbench.output import each as bench_progress

HELD_OUT = 100_000
SAMPLES = Path(__file__).parents[1] / "apps/lipread/samples"


def held_out(ckpt: Checkpoint, n: int, videos: Path) -> tuple[list[np.ndarray], list[str]]:
    """Model inputs of n held-out clips, their transcripts; each clip also as videos/NNNN.mp4."""
    xs, texts = [], []
    for i in range(n):
        words = spoken_sentence(HELD_OUT + i, 0)
        frames = render_clip(words, HELD_OUT + i, 0)
        write_video(videos / f"{i:04d}.mp4", frames)
        xs.append(to_model_input(resize(frames, (ckpt.config.height, ckpt.config.width))))
        texts.append(sentence_text(words))
    return xs, texts


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def accuracy(n: int) -> list[tuple[str, float, float, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        return accuracy_in(n, Path(tmp))


def accuracy_in(n: int, tmp: Path) -> list[tuple[str, float, float, float]]:
    """WER, CER and exact-sentence rate per path; the clips' mp4s and a compile go in tmp."""
    ckpt = load_checkpoint()
    xs, refs = held_out(ckpt, n, tmp)
    model = LipNet(ckpt.config).eval()
    model.load_lipnet_state({k: torch.from_numpy(v) for k, v in ckpt.state.items()})
    manifest_path = cached_manifest(ckpt)
    _, qgraph = compile_frontend(ckpt, synthetic_calibration(ckpt.config), out=tmp / "fe.mdla")
    if manifest_path is None:
        raise SystemExit("no shipped demo manifest: run apps/lipread/train_demo.py --manifest-only")
    manifest = mdla_runtime.load(manifest_path)
    target = mdla_runtime.open_target("emu")
    hyps: dict[str, list[str]] = {
        "FP32 (torch)": [],
        "INT8 reference (mdla_quant.run_int8)": [],
        "INT8 on the emulator (mtk-mdla)": [],
        "the app: H.264 mp4 -> lipread, emulator": [],
    }
    fp32, ref, emu, app = hyps.values()
    agree = 0
    for i in bench_progress(range(len(xs)), "clip"):
        x = xs[i]
        with torch.no_grad():
            fp32.append(greedy_ctc(model(torch.from_numpy(x))[0].numpy())[0])
        ref_feats = mdla_quant.run_int8(qgraph, [x])[0]
        emu_feats = target.run(manifest, [x]).outputs[0]
        agree += int(np.array_equal(ref_feats, emu_feats))
        ref.append(greedy_ctc(tail_logits(ref_feats, ckpt.state))[0])
        emu.append(greedy_ctc(tail_logits(emu_feats, ckpt.state))[0])
        app.append(read_sentence(tmp / f"{i:04d}.mp4", ckpt, Roi("none"), on="emu").text)
    print(f"emulator features == int8 reference features (bit-exact): {agree}/{n} clips")
    return [
        (name, corpus_rate(refs, h), corpus_rate(refs, h, "char"),
         sum(a == b for a, b in zip(refs, h, strict=True)) / n)
        for name, h in hyps.items()
    ]  # fmt: skip


def full_size(frames: int) -> tuple[float, float, float, float]:
    """Published-size front-end, random weights: emulator vs FP32 cosine and SQNR, emulator
    ms/frame, and end-to-end seconds of `read_sentence` on a 3 s 64x128 sample."""
    torch.manual_seed(0)
    state = {k: v.numpy() for k, v in LipNet(PUBLISHED).lipnet_state().items()}
    tmp = Path(tempfile.mkdtemp())
    save_npz(tmp / "published-random.npz", state, {"config": PUBLISHED.as_dict()})
    ckpt = load_checkpoint(tmp / "published-random.npz")
    os.environ["LIPREAD_CACHE"] = str(tmp / "cache")
    out = cache_dir() / f"{cache_key(ckpt, frames)}.mdla"
    calib = [x[:, :, :frames] for x in synthetic_calibration(PUBLISHED, clips=2)]
    compile_frontend(ckpt, calib, out=out, frames=frames)
    words = spoken_sentence(HELD_OUT + 999, 0)
    x = to_model_input(render_clip(words, HELD_OUT + 999, 0)[:frames].astype(np.float32))
    with torch.no_grad():
        ref = torch_frontend(ckpt)(torch.from_numpy(x)).numpy()
    result = mdla_runtime.open_target("emu").run(mdla_runtime.load(out), [x], repeat=3)
    got = result.outputs[0]
    sqnr = 10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / np.sum((ref - got) ** 2))
    sample = sorted(SAMPLES.glob("synthetic_*.mp4"))[0]
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        read_sentence(sample, ckpt, Roi("none"), on="emu")
        runs.append(time.perf_counter() - start)
    return cosine(ref, got), float(sqnr), result.latency_ms[0] / frames, statistics.median(runs)


def timings() -> tuple[float, float]:
    """Demo front-end ms/frame on the emulator; end-to-end seconds for a 3 s sample clip."""
    ckpt = load_checkpoint()
    path = cached_manifest(ckpt)
    if path is None:
        raise SystemExit("no shipped demo manifest: run apps/lipread/train_demo.py --manifest-only")
    x = next(iter(synthetic_calibration(ckpt.config, clips=1)))
    res = mdla_runtime.open_target("emu").run(mdla_runtime.load(path), [x], repeat=10)
    sample = sorted(SAMPLES.glob("synthetic_*.mp4"))[0]
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        read_sentence(sample, ckpt, Roi("none"), on="emu")
        runs.append(time.perf_counter() - start)
    return res.latency_ms[0] / x.shape[2], statistics.median(runs)


# the face level's `--roi auto` rows: MTCNN's nets on the emulator (what `lipread` runs) and
# in torch float (the reference, `--fp32`)
AUTO_VARIANTS = {"--roi auto, MTCNN on the NPU (emulator)": "emu", "--roi auto, float MTCNN": None}


def levels(n: int, face_n: int, tmp: Path) -> list[tuple[str, int, list[float]]]:
    """Per level (and ROI): clips, [FP32 WER, CER, INT8 WER, CER, mean INT8 confidence]."""
    ckpt = load_checkpoint()
    size = (ckpt.config.height, ckpt.config.width)
    model = LipNet(ckpt.config).eval()
    model.load_lipnet_state({k: torch.from_numpy(v) for k, v in ckpt.state.items()})
    manifest_path = cached_manifest(ckpt)
    if manifest_path is None:
        raise SystemExit("no shipped demo manifest: run apps/lipread/train_demo.py --manifest-only")
    manifest = mdla_runtime.load(manifest_path)
    target = mdla_runtime.open_target("emu")
    rows = []
    for name in bench_progress(list(LEVELS), "levels"):
        level = LEVELS[name]
        count = face_n if level.face else n
        variants = (*AUTO_VARIANTS, "known box") if level.face else ("whole frame",)
        hyps: dict[str, tuple[list[str], list[str], list[float]]] = {
            v: ([], [], []) for v in variants
        }
        refs, missed = [], dict.fromkeys(variants, 0)
        for i in range(count):
            speaker = HELD_OUT + 5000 + i
            words = spoken_sentence(speaker, 0)
            scene = render_scene(words, speaker, 0, level)
            write_video(tmp / "clip.mp4", scene.frames, crf=level.crf)
            frames = read_video(tmp / "clip.mp4")
            refs.append(sentence_text(words))
            for variant, (fp32, int8, conf) in hyps.items():
                if variant == "whole frame":
                    crops = resize(frames, size)
                elif variant == "known box":
                    crops = crop(frames, scene.boxes, size)
                else:
                    try:
                        corners = mtcnn_corners(frames, AUTO_VARIANTS[variant])
                        crops = crop(frames, boxes_from_corners(corners), size)
                    except NoFaceError:
                        missed[variant] += 1
                        fp32.append("")
                        int8.append("")
                        conf.append(0.0)
                        continue
                x = to_model_input(crops)
                with torch.no_grad():
                    fp32.append(greedy_ctc(model(torch.from_numpy(x))[0].numpy())[0])
                logits = tail_logits(target.run(manifest, [x]).outputs[0], ckpt.state)
                int8.append(greedy_ctc(logits)[0])
                conf.append(path_confidence(logits))
        for variant, (fp32, int8, conf) in hyps.items():
            label = f"{name} ({variant})" if level.face else name
            if variant in AUTO_VARIANTS:
                label += f", no face found in {missed[variant]}/{count}"
            rates = [corpus_rate(refs, h, unit) for h in (fp32, int8) for unit in ("word", "char")]
            rows.append((label, count, [*rates, float(np.mean(conf))]))
    return rows


def face_video(path: Path, frames: int) -> None:
    """A 640x360 clip of the astronaut photo's face (320x320) drifting, H.264."""
    photo = importlib.import_module("skimage.data").astronaut()
    face = np.clip(resize(photo[None], (320, 320))[0], 0, 255).astype(np.uint8)
    clip = np.full((frames, 360, 640, 3), 60, np.uint8)
    for t in range(frames):
        x, y = int(160 + 100 * np.sin(t / 40)), int(20 + 15 * np.sin(t / 23))
        clip[t, y : y + 320, x : x + 320] = face
    write_video(path, clip)


def roi_seconds(tmp: Path) -> tuple[float, dict[str, float], float, str]:
    """Seconds to read a 30 s face clip with --roi auto (per stage), and the pre-tracker
    per-frame MTCNN's seconds for its first 75 frames (x10 for the clip)."""
    face_video(tmp / "face30.mp4", 750)
    ckpt = load_checkpoint()
    start = time.perf_counter()
    reading = read_sentence(tmp / "face30.mp4", ckpt, Roi("default"), on="emu")
    after = time.perf_counter() - start
    frames = read_video(tmp / "face30.mp4")[:75]
    detector = importlib.import_module("facenet_pytorch").MTCNN(device="cpu", keep_all=False)
    start = time.perf_counter()
    for i in range(0, len(frames), 16):
        detector.detect([np.ascontiguousarray(f) for f in frames[i : i + 16]], landmarks=True)
    before = (time.perf_counter() - start) * 10
    return after, reading.seconds, before, reading.roi


def mtcnn_bench(tmp: Path) -> dict[str, float]:
    """The NPU detector on the 30 s face clip (module docstring, part 7)."""
    from lipread.mtcnn import iou
    from lipread.mtcnn_npu import CascadeDetector, detect_size, npu_nets, track_batched

    face_video(tmp / "face30.mp4", 750)
    ckpt = load_checkpoint()
    os.environ["LIPREAD_CACHE"] = str(tmp / "cache")  # empty: the first read compiles MTCNN
    out: dict[str, float] = {}
    for run in ("cold", "warm"):
        start = time.perf_counter()
        reading = read_sentence(tmp / "face30.mp4", ckpt, Roi("auto"), on="emu")
        out[f"e2e {run}"] = time.perf_counter() - start
        out[f"crop {run}"] = reading.seconds["crop"]
    frames = read_video(tmp / "face30.mp4")
    size = detect_size(*frames.shape[1:3])
    lat: list[float] = []
    det = CascadeDetector(npu_nets(size, "emu", lat), size)
    start = time.perf_counter()
    faces = [det.detect(f) for f in frames[:250:25]]
    out["detect wall ms"] = (time.perf_counter() - start) * 1e3 / 10
    out["detect device ms"] = sum(lat) / 10
    out["detect calls"] = len(lat) / 10
    boxes = [f.box for f in faces if f is not None]
    lat.clear()
    start = time.perf_counter()
    det.refine_many(list(frames[1:51]), [boxes[0]] * 50)
    out["refine wall ms/frame"] = (time.perf_counter() - start) * 1e3 / 50
    out["refine device ms/frame"] = sum(lat) / 50
    lat.clear()
    start = time.perf_counter()
    npu = boxes_from_corners(track_batched(frames, det))
    out["track wall s"] = time.perf_counter() - start
    out["track calls"] = len(lat)
    out["track device ms/frame"] = sum(lat) / len(frames)
    start = time.perf_counter()
    ref = boxes_from_corners(mtcnn_corners(frames))
    out["float track wall s"] = time.perf_counter() - start
    xyxy = [np.r_[b[:2], b[:2] + b[2:]] for b in (*npu, *ref)]
    ious = np.array([iou(a, b) for a, b in zip(xyxy[: len(npu)], xyxy[len(npu) :], strict=True)])
    out["iou min"], out["iou mean"] = float(ious.min()), float(ious.mean())
    out["iou >= 0.7"] = float((ious >= 0.7).mean())
    return out


def print_mtcnn() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        m = mtcnn_bench(Path(tmp))
    print(
        "\nMTCNN on the NPU (emulator), 30 s 640x360 face clip (750 frames), detection at 480x270"
    )
    print("\n| measure | value |")
    print("|---|---|")
    print(f"| one detection (P-Net pyramid, R-Net, O-Net), wall | {m['detect wall ms']:.0f} ms |")
    print(f"| one detection, device time (emulator) | {m['detect device ms']:.1f} ms |")
    print(f"| one detection, engine calls | {m['detect calls']:.1f} |")
    print(f"| O-Net refine, batch of 50, wall per frame | {m['refine wall ms/frame']:.2f} ms |")
    print(f"| O-Net refine, device per frame | {m['refine device ms/frame']:.2f} ms |")
    print(f"| whole clip tracked (`track_batched`), wall | {m['track wall s']:.2f} s "
          f"({m['track wall s'] * 1e3 / 750:.1f} ms/frame) |")  # fmt: skip
    print(f"| whole clip tracked, engine calls | {m['track calls']:.0f} |")
    print(f"| whole clip tracked, device per frame | {m['track device ms/frame']:.2f} ms |")
    print(f"| float reference tracker (torch MTCNN, per-frame O-Net), wall | "
          f"{m['float track wall s']:.2f} s |")  # fmt: skip
    print(f"| mouth boxes NPU vs float, IoU min / mean / share >= 0.7 | {m['iou min']:.3f} / "
          f"{m['iou mean']:.3f} / {m['iou >= 0.7']:.1%} |")  # fmt: skip
    print(f"| `read_sentence --roi auto`, detector compiled on first use (cold) | "
          f"{m['e2e cold']:.1f} s (crop stage {m['crop cold']:.1f} s) |")  # fmt: skip
    print(f"| `read_sentence --roi auto`, detector cached (warm) | {m['e2e warm']:.1f} s "
          f"(crop stage {m['crop warm']:.1f} s) |")  # fmt: skip


def avsr_bench() -> tuple[list[tuple[int, float, float]], float]:
    """auto-avsr front-end: per held-out clip INT8-vs-FP32 cosine (whole clip, worst frame);
    emulator ms/frame."""
    from lipread.avsr import AvsrFrontEnd, bn_stats_from, to_avsr_input
    from lipread.avsr_npu import HALO, WINDOW, npu_avsr
    from lipread.frontend import run_chunked

    def clip(speaker: int, frames: int) -> np.ndarray:
        words = spoken_sentence(speaker, 0)
        return to_avsr_input(render_clip(words, speaker, 0, frames=frames))

    torch.manual_seed(0)
    fe = bn_stats_from(AvsrFrontEnd(), [clip(20000 + i, WINDOW) for i in range(9)])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LIPREAD_CACHE"] = tmp
        calib = [clip(20000 + i, 75) for i in range(12)]  # whole sentences: 36 windows
        fn, latencies = npu_avsr(fe, "emu", calibration=calib)
        for speaker in range(HELD_OUT + 4242, HELD_OUT + 4245):
            x = clip(speaker, 75)
            got = run_chunked(fn, x, WINDOW, HALO)[0].T
            with torch.no_grad():
                ref = fe(torch.from_numpy(x))[0].numpy()
            frame = (got * ref).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(ref, axis=1)
            rows.append((speaker, cosine(got, ref), float(frame.min())))
    return rows, float(np.median(latencies)) / WINDOW


def print_avsr() -> None:
    rows, ms = avsr_bench()
    print("\nauto-avsr visual front-end, random weights (seed 0), BN statistics from 9 synthetic")
    print("clips, calibrated (percentile 99.999) on every 25-frame window of 12 75-frame clips;")
    print("held-out 75-frame clips, INT8 (emulator) vs FP32\n")
    print("| clip (speaker) | cosine, whole clip | cosine, worst frame |")
    print("|---|---|---|")
    for speaker, cos, worst in rows:
        print(f"| {speaker} | {cos:.4f} | {worst:.4f} |")
    print(f"\nemulator ms/frame (stem + trunk, median 25-frame window): {ms:.2f}")


def print_levels(n: int, face_n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = levels(n, face_n, Path(tmp))
    print("\nWER/CER per difficulty level (lipread.scenes), held-out speakers 105000+, the demo")
    print("model's front-end in FP32 (torch) and INT8 (emulator), the same tail; H.264 at each")
    print("level's crf; confidence: mean of lipread.confidence on the INT8 path\n")
    head = ("level", "clips", "FP32 WER", "FP32 CER", "INT8 WER", "INT8 CER", "INT8 - FP32 WER")
    print("| " + " | ".join((*head, "confidence")) + " |")
    print("|---|---|---|---|---|---|---|---|")
    for label, count, (fw, fc, iw, ic, conf) in rows:
        print(f"| {label} | {count} | {fw:.2%} | {fc:.2%} | {iw:.2%} | {ic:.2%} | "
              f"{iw - fw:+.2%} | {conf:.3f} |")  # fmt: skip
    for name, level in LEVELS.items():
        print(f"- {name}: {level}")


def print_roi() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        after, stages, before, roi = roi_seconds(Path(tmp))
    print("\n| 30 s 640x360 face clip (750 frames), --roi auto | seconds |")
    print("|---|---|")
    print(f"| before: MTCNN on every frame (first 75 frames timed, x10) | {before:.1f} |")
    print(f"| after: `read_sentence`, default --roi (resolved to {roi}), total | {after:.1f} |")
    for stage, sec in stages.items():
        print(f"| after: stage {stage} | {sec:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", type=int, default=200)
    ap.add_argument("--full-frames", type=int, default=75)
    ap.add_argument("--level-clips", type=int, default=100, help="clips per difficulty level")
    ap.add_argument("--face-clips", type=int, default=40, help="clips for the face level")
    ap.add_argument("--parts", default="accuracy,full,timings,levels,roi,avsr,mtcnn")
    args = ap.parse_args()
    torch.set_num_threads(2)
    start = time.perf_counter()
    parts = set(args.parts.split(","))
    if "levels" in parts:
        print_levels(args.level_clips, args.face_clips)
    if "roi" in parts:
        print_roi()
    if "avsr" in parts:
        print_avsr()
    if "mtcnn" in parts:
        print_mtcnn()
    if parts & {"accuracy", "full", "timings"}:
        old_parts(args)
    print(f"\n(bench wall time {time.perf_counter() - start:.0f} s)")


def old_parts(args: argparse.Namespace) -> None:
    rows = accuracy(args.clips)
    print(f"\nHeld-out synthetic GRID, {args.clips} clips (unseen speakers), demo model:\n")
    print("| path | WER | CER | sentences exact |")
    print("|---|---|---|---|")
    for name, wer, cer, exact in rows:
        print(f"| {name} | {wer:.2%} | {cer:.2%} | {exact:.1%} |")
    gap = max(abs(wer - rows[0][1]) for _, wer, _, _ in rows[1:])
    verdict = "met" if gap <= 0.005 else "NOT met"
    print(f"\nlargest |WER(INT8 path) - WER(FP32)|: {gap:.2%} (bar 0.50%): {verdict}")
    cos, sqnr, full_ms, full_e2e = full_size(args.full_frames)
    demo_ms, e2e = timings()
    print("\n| measure | value |")
    print("|---|---|")
    print(f"| full-size LipNet front-end (random weights), emulator vs FP32 cosine "
          f"({args.full_frames} frames) | {cos:.6f} (SQNR {sqnr:.1f} dB) |")  # fmt: skip
    print(f"| full-size LipNet front-end, emulator ms/frame | {full_ms:.2f} |")
    print(f"| full-size LipNet, end-to-end 3 s clip (64x128), emulator | {full_e2e:.2f} s |")
    print(f"| demo front-end, emulator ms/frame | {demo_ms:.3f} |")
    print(f"| end-to-end, 3 s clip (75 frames), emulator | {e2e:.2f} s |")


if __name__ == "__main__":
    main()
