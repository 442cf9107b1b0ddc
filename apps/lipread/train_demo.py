"""Train the synthetic-GRID demo LipNet and write the shipped weights and sample videos.

The recipe (CPU, 2 shared cores, <= 30 min wall with the corpus render):
  corpus   synthetic GRID (lipread.render), 64x128 crops resized to 32x64; training speakers
           seeds 0..59 (30 random sentences each), validation speakers 5000..5099 (1 each);
           speakers 100000+ are reserved for bench/lipread.py and never used here
  model    LipNet-PyTorch layers at DEMO size (lipread.config.DEMO): conv 8/16/24, BiGRU 64
  training CTC (blank 0), Adam lr 3e-3 -> cosine decay, batch 16, grad-norm clip 5,
           horizontal flip p=0.5, dropout 0.1 (front-end) / 0.2 (GRU), until the time budget;
           the best epoch by validation WER + CER is kept. The rendered corpus is cached in
           /tmp/lipread_corpus_v1.npz. `--ce-weight W` adds W x frame-level cross-entropy on
           the renderer's own word timing (characters spread over each word's frames; greedy
           CTC decodes that alignment to the sentence); tried at 1 and 0.3, it stalled CTC.
  output   src/lipread/weights/lipnet_demo_synthetic.npz (best validation WER), its compiled
           INT8 front-end lipnet_demo_synthetic.T75.mdla (calibrated on synthetic speakers
           20000..20003) and three samples/synthetic_*.mp4 from unseen speakers 9001..9003

    .venv/bin/python apps/lipread/train_demo.py [--minutes 16] [--resume] [--ce-weight W]
                                                [--samples-only | --manifest-only]

The shipped weights come from `--minutes 16` (39 epochs; see apps/lipread/README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812

from lipread.checkpoint import load_checkpoint, save_npz
from lipread.config import DEMO
from lipread.frontend import CLIP_FRAMES, compile_frontend
from lipread.grid import encode, greedy_ctc, sample_sentence, sentence_text
from lipread.image import resize, to_model_input
from lipread.metrics import corpus_rate
from lipread.model import LipNet
from lipread.pipeline import synthetic_calibration
from lipread.render import render_aligned, render_clip
from lipread.video import write_video

HERE = Path(__file__).parent
WEIGHTS = HERE / "src/lipread/weights/lipnet_demo_synthetic.npz"
SAMPLES = HERE / "samples"
CORPUS = Path("/tmp/lipread_corpus_v1.npz")
BATCH = 16


def log(*parts: object) -> None:
    sys.stdout.write(" ".join(str(p) for p in parts) + "\n")
    sys.stdout.flush()


def frame_targets(words: tuple[str, ...], spans: list[tuple[float, float]], n: int) -> np.ndarray:
    """Per-frame CTC classes from the renderer's word timing (0 = blank outside words)."""
    out = np.zeros(n, np.int64)
    for i, (word, (start, end)) in enumerate(zip(words, spans, strict=True)):
        tokens: list[int] = []
        for label in encode(word):
            tokens += [0, label] if tokens and tokens[-1] == label else [label]
        last = i == len(words) - 1
        stop = end if last else spans[i + 1][0]
        tokens += [] if last else [1]
        a, b = round(start), max(round(stop), round(start) + 1)
        for j, t in enumerate(range(a, min(b, n))):
            out[t] = tokens[min(len(tokens) - 1, j * len(tokens) // (b - a))]
    return out


def make_clip(job: tuple[int, int]) -> tuple[np.ndarray, str, np.ndarray]:
    speaker, clip = job
    words = sample_sentence(np.random.default_rng([speaker, clip, 7]))
    frames, spans = render_aligned(words, speaker, clip)
    small = resize(frames, (DEMO.height, DEMO.width))
    clip_u8 = np.clip(np.round(small), 0, 255).astype(np.uint8)
    return clip_u8, sentence_text(words), frame_targets(words, spans, len(frames))


def corpus(jobs: list[tuple[int, int]]) -> tuple[np.ndarray, list[str], np.ndarray]:
    with Pool(2) as pool:
        out = pool.map(make_clip, jobs, chunksize=16)
    return np.stack([o[0] for o in out]), [o[1] for o in out], np.stack([o[2] for o in out])


def cached_corpus() -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray, list[str]]:
    if CORPUS.is_file():
        with np.load(CORPUS) as z:
            return z["xt"], list(z["yt"]), z["at"], z["xv"], list(z["yv"])
    xt, yt, at = corpus([(s, c) for s in range(60) for c in range(30)])
    xv, yv, _ = corpus([(5000 + s, 0) for s in range(100)])
    np.savez(CORPUS, xt=xt, yt=np.array(yt), at=at, xv=xv, yv=np.array(yv))
    return xt, yt, at, xv, yv


def batch_input(clips: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.concatenate([to_model_input(c) for c in clips]))


def evaluate(model: LipNet, clips: np.ndarray, texts: list[str]) -> tuple[float, float]:
    model.eval()
    hyps: list[str] = []
    with torch.no_grad():
        for i in range(0, len(clips), 25):
            logits = model(batch_input(clips[i : i + 25])).numpy()
            hyps.extend(greedy_ctc(lg)[0] for lg in logits)
    model.train()
    return corpus_rate(texts, hyps), corpus_rate(texts, hyps, "char")


def train(minutes: float, resume: bool = False, ce_weight: float = 0.0) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(2)
    t0 = time.time()
    x_train, y_train, a_train, x_val, y_val = cached_corpus()
    log(f"rendered {len(x_train)} + {len(x_val)} clips in {time.time() - t0:.0f}s")
    model = LipNet(DEMO, dropout=0.2)
    model.frontend.dropout3d.p = 0.1
    lr0 = 3e-3
    if resume:  # continue from the shipped weights (a second stage at a lower rate)
        model.load_lipnet_state(
            {k: torch.from_numpy(v) for k, v in load_checkpoint(WEIGHTS).state.items()}
        )
        lr0 = 2e-3
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    ctc = torch.nn.CTCLoss(blank=0, zero_infinity=True)
    labels = [torch.tensor(encode(t)) for t in y_train]
    budget, start, step, best = minutes * 60, time.time(), 0, 9.0
    rng = np.random.default_rng(0)
    epoch = 0
    while time.time() - start < budget:
        epoch += 1
        order, losses = rng.permutation(len(x_train)), []
        for i in range(0, len(order) - BATCH + 1, BATCH):
            idx = order[i : i + BATCH]
            clips, align = x_train[idx], torch.from_numpy(a_train[idx])
            flip = rng.random(len(idx)) < 0.5
            clips = np.where(flip[:, None, None, None, None], clips[:, :, :, ::-1], clips)
            frac = min(1.0, (time.time() - start) / budget)
            for g in opt.param_groups:
                g["lr"] = lr0 * (0.05 + 0.95 * 0.5 * (1 + np.cos(np.pi * frac)))
            logits = model(batch_input(clips))
            frame_ce = (
                F.cross_entropy(logits.reshape(-1, logits.shape[-1]), align.reshape(-1))
                if ce_weight
                else 0.0
            )
            logp = F.log_softmax(logits, -1).permute(1, 0, 2)
            tgt = [labels[j] for j in idx]
            loss = ctc(
                logp,
                torch.cat(tgt),
                torch.full((len(idx),), logp.shape[0], dtype=torch.long),
                torch.tensor([len(t) for t in tgt]),
            )
            total = loss + ce_weight * frame_ce if ce_weight else loss
            opt.zero_grad()
            total.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            losses.append(float(loss.detach()))
            step += 1
        wer, cer = evaluate(model, x_val, y_val)
        mins = (time.time() - t0) / 60
        log(
            f"epoch {epoch} step {step} loss {np.mean(losses):.4f} val WER {wer:.4f} "
            f"CER {cer:.4f} ({mins:.1f} min)",
        )
        if wer + cer <= best:
            best = wer + cer
            meta = {
                "config": DEMO.as_dict(),
                "synthetic": True,
                "recipe": "apps/lipread/train_demo.py",
                "epoch": epoch,
                "train_loss": float(np.mean(losses)),
                "val_wer": wer,
                "val_cer": cer,
                "train_minutes": round(mins, 1),
            }
            state = {k: v.detach().numpy() for k, v in model.lipnet_state().items()}
            save_npz(WEIGHTS, state, meta)
    log(f"best val WER + CER {best:.4f}; wrote {WEIGHTS}")


def ship_manifest() -> None:
    """Compile the demo front-end once and ship it, so `lipread` runs without torch."""
    ckpt = load_checkpoint(WEIGHTS)
    out = WEIGHTS.with_name(f"{WEIGHTS.stem}.T{CLIP_FRAMES}.mdla")
    path, _ = compile_frontend(ckpt, synthetic_calibration(ckpt.config), out=out)
    log("wrote", path, f"({path.stat().st_size} bytes)")


def samples() -> None:
    SAMPLES.mkdir(exist_ok=True)
    for speaker in (9001, 9002, 9003):
        words = sample_sentence(np.random.default_rng([speaker, 0, 7]))
        path = SAMPLES / f"synthetic_s{speaker}_{'_'.join(words)}.mp4"
        write_video(path, render_clip(words, speaker, 0))
        log(path, json.dumps(sentence_text(words)))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=16.0)
    ap.add_argument("--samples-only", action="store_true")
    ap.add_argument("--manifest-only", action="store_true")
    ap.add_argument("--resume", action="store_true", help="continue from the shipped weights")
    ap.add_argument("--ce-weight", type=float, default=0.0, help="frame-level CE (see above)")
    args = ap.parse_args()
    if not args.manifest_only:
        samples()
    if not (args.samples_only or args.manifest_only):
        train(args.minutes, args.resume, args.ce_weight)
    if not args.samples_only:
        ship_manifest()
