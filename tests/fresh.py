"""The fresh hand-written set end to end, as a user runs it: `mdla_compile.compile` (import by
`auto`), and where the MDLA alone refuses, again with `--cpu auto`; then the `.mdla` on the host
emulator (the engine, CPU partitions included) against `mdla_quant.run_int8`, bit for bit.

A `Verdict` per model: the import path, `npu` (every op on the MDLA), `cpu` (compiled with
`--cpu auto`; the CPU kinds named), `refused` (exit 3, the one line), `not exact` (the emulator
differs from run_int8), or `error` (anything else: a bug)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

import mdla_compile
from mdla_compile import CompileOptions
from mdla_ir.partitions import partitions
from mdla_quant import run_int8
from mdla_runtime import open_target
from mdla_zoo import Model
from tests import models_fresh as a
from tests import models_fresh_more as b
from tests import models_wide as w
from tests.models_rewrites import _bn_stats
from workbench.errors import UNSUPPORTED, exit_code, one_line

Array = np.ndarray[Any, Any]
IMAGE = (1, 3, 32, 32)


@dataclass(frozen=True)
class Case:
    make: Callable[[], nn.Module]
    shapes: tuple[tuple[int, ...], ...] = (IMAGE,)


CASES: dict[str, Case] = {
    "functional_conv": Case(a.FunctionalConv),
    "inplace_residual": Case(a.InplaceResidual),
    "torch_flatten": Case(a.TorchFlatten),
    "mean_list_head": Case(a.MeanListHead),
    "se_net": Case(a.SENet),
    "cbam": Case(a.CBAM),
    "coord_attention": Case(a.CoordAttention),
    "shuffle_block": Case(a.ShuffleBlock),
    "sub_pixel": Case(a.SubPixel),
    "unshuffle": Case(a.Unshuffle),
    "mobilenet_v1ish": Case(a.MobileNetV1ish),
    "dilated_context": Case(a.DilatedContext),
    "grouped_bottleneck": Case(a.GroupedBottleneck),
    "where_gates": Case(a.WhereGates),
    "elementwise_math": Case(a.ElementwiseMath),
    "swish_by_hand": Case(a.SwishByHand),
    "smooth_acts": Case(a.SmoothActs),
    "leaky_elu": Case(a.LeakyElu),
    "prelu_net": Case(a.PReLUNet),
    "pool_variants": Case(a.PoolVariants, ((1, 3, 31, 29),)),
    "dilated_max_pool": Case(a.DilatedMaxPool),
    "global_max_head": Case(a.GlobalMaxHead),
    "ghost_module": Case(a.GhostModule),
    "permute_linear": Case(a.PermuteLinear),
    "einsum_pointwise": Case(b.EinsumPointwise),
    "inverted_residual": Case(b.InvertedResidual),
    "transpose_decoder": Case(b.TransposeDecoder),
    "unet_nearest": Case(b.UNetNearest),
    "unet_align_corners": Case(b.UNetAlignCorners, ((1, 3, 28, 36),)),
    "unet_bilinear": Case(b.UNetBilinear),
    "chunk_split_unbind": Case(b.ChunkSplitUnbind),
    "group_norm": Case(b.GroupNormNet),
    "instance_norm": Case(b.InstanceNormNet),
    "channel_layer_norm": Case(b.ChannelLayerNorm),
    "module_list_loop": Case(b.ModuleListLoop),
    "dict_outputs": Case(b.DictOutputs),
    "tuple_list_outputs": Case(b.TupleListOutputs),
    "two_inputs": Case(b.TwoInputs, (IMAGE, (1, 1, 32, 32))),
    "normalize_inside": Case(b.NormalizeInside),
    "identity_dropout": Case(b.IdentityDropout),
    "size_arithmetic": Case(b.SizeArithmetic),
    "non_square": Case(b.NonSquare, ((1, 3, 24, 40),)),
    "list_sum": Case(b.ListSum),
    "residual_gate": Case(b.ResidualGate),
    "channel_softmax": Case(b.ChannelSoftmax),
    "normalized_embedding": Case(b.NormalizedEmbedding),
    "ecg_net": Case(b.ECGNet, ((1, 1, 256),)),
    "audio_separable": Case(b.AudioSeparable, ((1, 20, 64),)),
    "tiny_video": Case(b.TinyVideo, ((1, 3, 4, 16, 16),)),
    "multi_scale_sum": Case(b.MultiScaleSum),
    "spatial_mean_gate": Case(b.SpatialMeanGate),
    "upsampling_adaptive_head": Case(w.UpsamplingAdaptiveHead),
    "signed_stem_pool": Case(w.SignedStemPool),
    "space_to_depth_view": Case(w.SpaceToDepthView),
    "token_mlp_decoder": Case(w.TokenMLPDecoder),
    "class_token": Case(w.ClassToken),
    "coord_channels": Case(w.CoordChannels),
    "rotated_box_head": Case(w.RotatedBoxHead),
    "split_attention": Case(w.SplitAttention),
    "split_attention_radix4": Case(lambda: w.SplitAttention(4)),
    "selective_kernel": Case(w.SelectiveKernel),
    "uneven_adaptive_pool": Case(w.UnevenAdaptivePool),
}


def build(name: str, seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The model (seeded weights, non-trivial BatchNorm statistics, eval mode) and its example
    inputs (zeros)."""
    torch.manual_seed(seed)
    case = CASES[name]
    module = _bn_stats(case.make(), seed)
    return module, tuple(torch.zeros(s) for s in case.shapes)


def inputs(shapes: tuple[tuple[int, ...], ...], n: int, seed: int) -> list[list[Array]]:
    rng = np.random.default_rng(seed)
    return [[rng.uniform(-1.0, 1.0, s).astype(np.float32) for s in shapes] for _ in range(n)]


@dataclass
class Verdict:
    name: str
    path: str = "-"
    verdict: str = "error"  # npu, cpu, refused, not exact, error
    partitions: int = 0
    cpu_kinds: list[str] = field(default_factory=list)
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict in ("npu", "cpu")


def _compile(name: str, cpu: tuple[str, ...]) -> mdla_compile.Compiled:
    module, example = build(name)
    calib = inputs(CASES[name].shapes, 3, 0)
    options = CompileOptions(
        Model(name, module, example, preprocess=None), calib=calib, count=3, cpu=cpu
    )
    return mdla_compile.compile(options)


def run_case(name: str) -> Verdict:
    """Compile `name` (on the MDLA alone, else with `--cpu auto`), run it on the emulator and
    compare with run_int8; never raises."""
    v = Verdict(name)
    try:
        try:
            compiled = _compile(name, ())
        except Exception as exc:
            if exit_code(exc) != UNSUPPORTED:
                raise
            compiled = _compile(name, ("auto",))
        v.path = compiled.source.import_path or "-"
        qgraph = compiled.qgraph
        parts = partitions(qgraph)
        v.partitions = len(parts)
        on_cpu = set(qgraph.provenance.cpu_ops)
        v.cpu_kinds = sorted({o.kind.name for o in qgraph.ops if o.name in on_cpu})
        with tempfile.TemporaryDirectory() as tmp:
            manifest = compiled.save(Path(tmp) / f"{name}.mdla", store_float=False)
            x = inputs(CASES[name].shapes, 1, 7)[0]
            got = open_target("emu").run(manifest, x).raw_outputs
        want = run_int8(qgraph, x, raw=True)
        same = all(np.array_equal(g.reshape(w.shape), w) for g, w in zip(got, want, strict=True))
        v.verdict = ("cpu" if v.cpu_kinds else "npu") if same else "not exact"
        v.message = f"CPU: {', '.join(v.cpu_kinds)}" if v.cpu_kinds else ""
    except Exception as exc:
        v.verdict = "refused" if exit_code(exc) == UNSUPPORTED else "error"
        v.message = f"{type(exc).__name__}: {one_line(exc)}"
    return v


def table(verdicts: list[Verdict], limit: int = 300) -> str:
    """The markdown table (model, path, verdict, partitions, message cut to `limit`
    characters) and the tally."""
    rows = ["| model | path | verdict | partitions | message |", "|---|---|---|---|---|"]
    for v in verdicts:
        cut = v.message if len(v.message) <= limit else v.message[: limit - 3] + "..."
        message = cut.replace("|", "\\|")
        rows.append(f"| {v.name} | {v.path} | {v.verdict} | {v.partitions} | {message} |")
    passed = sum(v.passed for v in verdicts)
    rows.append(f"\n{passed}/{len(verdicts)} end to end, bit-exact on the emulator")
    return "\n".join(rows)
