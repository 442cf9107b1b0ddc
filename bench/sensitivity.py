"""Per-tensor int16 sensitivity of efficientnet_lite0 (or another zoo classifier) and the
budgeted choice, simulated (`mdla_quant.sensitivity`): agreement with FP32 on the held-out
inputs FP32 decides and logits SQNR, all int8, with the chosen tensors int16 at each budget,
and all int16.

    .venv/bin/python bench/sensitivity.py [--model efficientnet_lite0] [--calib 32] \
        [--held 16] [--crops 200] [--budgets 5,10,25]

Calibration crops (seed 1) quantize the graph; `--held` other crops (seed 3) measure each
tensor's gain; `--crops` crops (seed 2, bench/accuracy.py's held-out set) judge the result.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from accuracy import PHOTOS, compile_first, crops, margin  # the sibling script

import mdla_ir
from mdla_quant import QuantConfig
from mdla_quant.precision import a16_candidates, choose, tensor_costs
from mdla_quant.sensitivity import candidates, sensitivity, simulate_a16
from mdla_quant.simulate import with_int8_weights
from mdla_zoo import load_model


def judge(
    graph: mdla_ir.Graph, q: mdla_ir.Graph, held: list[np.ndarray], int16: tuple[str, ...]
) -> str:
    """Agreement on decided / all inputs and logits SQNR with `int16` as a16 builds them
    (simulated: `simulate_a16`)."""
    rounded = with_int8_weights(graph, q)
    ref = [mdla_ir.run_float(graph, [x])[0][0] for x in held]
    test = [outs[0] for outs in simulate_a16(rounded, q, [[x] for x in held], int16)]
    decided = np.array([margin(z) >= 0.05 for z in ref])
    same = np.array([np.argmax(a) == np.argmax(b) for a, b in zip(ref, test, strict=True)])
    signal = sum(float((r.astype(np.float64) ** 2).sum()) for r in ref)
    noise = sum(
        float(((t - r).astype(np.float64) ** 2).sum()) for r, t in zip(ref, test, strict=True)
    )
    return (
        f"decided {int(same[decided].sum())}/{int(decided.sum())}  all {int(same.sum())}/"
        f"{len(same)}  SQNR {10 * np.log10(signal / noise):.1f} dB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficientnet_lite0")
    parser.add_argument("--calib", type=int, default=32)
    parser.add_argument("--held", type=int, default=16)
    parser.add_argument("--crops", type=int, default=200)
    parser.add_argument("--budgets", default="5,10,25")
    args = parser.parse_args()
    model = load_model(args.model)
    side = int(model.example_inputs[0].shape[-1])
    photos = [load() for load in PHOTOS.values()]
    calib = [[x] for x in crops(photos, args.calib, seed=1, side=side)]
    first = compile_first(model, calib, QuantConfig())
    graph, q = first.device_graph, first.qgraph
    probe = [[x] for x in crops(photos, args.held, seed=3, side=side)]
    held = crops(photos, args.crops, seed=2, side=side)
    names = candidates(graph, q)
    start = time.perf_counter()
    allowed = [n for n in a16_candidates(graph) if n in names]
    found = sensitivity(
        graph, q, probe, allowed, lambda k, n, _t: bench_tick(k, n), allowed=allowed
    )
    print(
        f"\n{args.model}: {len(names)} inner int8 activations ({len(allowed)} the 16x8 kernels "
        f"take), sensitivity on {args.held} crops in {time.perf_counter() - start:.0f} s "
        f"(simulated); all int8 there: {found.sqnr_db:.1f} dB"
    )
    for g in found.gains[:10]:
        print(f"  {g.tensor:<32} +{g.gain_db:5.2f} dB  with {', '.join(g.tensors[1:]) or '-'}")
    costs = tensor_costs(graph)
    print(f"held-out {args.crops} crops, simulated:")
    print(f"  all int8          {judge(graph, q, held, ())}")
    for b in (float(x) / 100 for x in args.budgets.split(",")):
        picked = choose(found, costs, b, allowed=allowed)
        share = sum(c.share for c in picked)
        names16 = tuple(c.tensor for c in picked)
        verdict = judge(graph, q, held, names16)
        print(f"  budget {b:4.0%} ({len(picked):>3} tensors, {share:5.1%})  {verdict}")
    print(f"  all a16-able ({len(allowed)})  {judge(graph, q, held, tuple(allowed))}")
    print(f"  all int16 ({len(names)})     {judge(graph, q, held, tuple(names))}")


def bench_tick(k: int, n: int) -> None:
    if k % 10 == 0 or k == n:
        print(f"  sensitivity {k}/{n}", flush=True)


if __name__ == "__main__":
    main()
