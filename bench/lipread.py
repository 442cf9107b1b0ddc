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

    .venv/bin/python bench/lipread.py [--clips 200] [--full-frames 75]
"""

# ruff: noqa: E402  (the path fix below must run before `lipread` is imported)
from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path and its name shadows the
# `lipread` package: drop the folder.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import torch

import mdla_quant
import mdla_runtime
from lipread.checkpoint import Checkpoint, load_checkpoint, save_npz
from lipread.config import PUBLISHED
from lipread.frontend import (
    cache_dir,
    cache_key,
    cached_manifest,
    compile_frontend,
    torch_frontend,
)
from lipread.grid import greedy_ctc, sentence_text
from lipread.image import resize, to_model_input
from lipread.metrics import corpus_rate
from lipread.model import LipNet
from lipread.pipeline import read_sentence, synthetic_calibration
from lipread.render import render_clip, spoken_sentence
from lipread.roi import Roi
from lipread.tail import tail_logits
from lipread.video import write_video

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
    for i, x in enumerate(xs):
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", type=int, default=200)
    ap.add_argument("--full-frames", type=int, default=75)
    args = ap.parse_args()
    torch.set_num_threads(2)
    start = time.perf_counter()
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
    print(f"\n(bench wall time {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
