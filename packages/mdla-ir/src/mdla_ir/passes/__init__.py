"""Graph passes: each is `pass(graph) -> PassResult(graph, changed)`, pure and idempotent.

`run_passes` runs a pipeline as one stage of the pass manager (`passes.manager`): to a fixed
point and, with `verify=True`, with the verifier after every pass so that a broken graph is
blamed on the pass that broke it.
"""

from __future__ import annotations

from collections.abc import Sequence

from mdla_ir.graph import Graph
from mdla_ir.passes.canonicalize_mean import canonicalize_mean
from mdla_ir.passes.canonicalize_reshapes import canonicalize_reshapes
from mdla_ir.passes.drop_identities import drop_identities
from mdla_ir.passes.eliminate_dead_ops import eliminate_dead_ops
from mdla_ir.passes.fold_batchnorm import fold_batchnorm
from mdla_ir.passes.fuse_activations import fuse_activations
from mdla_ir.passes.manager import (
    Pass,
    PassError,
    RuleSet,
    Stage,
    Trace,
    UnknownPassError,
    run_stages,
)
from mdla_ir.passes.mark_depthwise import mark_depthwise
from mdla_ir.passes.rewrite import PassResult, Rewriter

# The import pipeline, top to bottom.
DEFAULT_PASSES: tuple[Pass, ...] = (
    drop_identities,  # DROPOUT/IDENTITY          -> (nothing)
    canonicalize_reshapes,  # FLATTEN/RESHAPE chains    -> one RESHAPE or nothing
    canonicalize_mean,  # ADAPTIVE_AVG_POOL_2D(1×1) -> MEAN(H, W)
    fold_batchnorm,  # CONV -> BATCH_NORM        -> CONV (scaled w, shifted b)
    mark_depthwise,  # CONV_2D(groups=C)         -> DEPTHWISE_CONV_2D
    fuse_activations,  # CONV/ADD -> RELU(6)       -> CONV/ADD + fuse code
)


def run_passes(graph: Graph, passes: Sequence[Pass] = DEFAULT_PASSES, verify: bool = True) -> Graph:
    """`passes` as the one stage `passes`, run to a fixed point (PassError if it breaks)."""
    return run_stages(graph, [Stage("passes", tuple(passes))], verify=verify)[0]


__all__ = [
    "DEFAULT_PASSES",
    "Pass",
    "PassError",
    "PassResult",
    "Rewriter",
    "RuleSet",
    "Stage",
    "Trace",
    "UnknownPassError",
    "canonicalize_mean",
    "canonicalize_reshapes",
    "drop_identities",
    "eliminate_dead_ops",
    "fold_batchnorm",
    "fuse_activations",
    "mark_depthwise",
    "run_passes",
    "run_stages",
]
