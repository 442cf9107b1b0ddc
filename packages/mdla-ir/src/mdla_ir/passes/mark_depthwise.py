"""Mark depthwise convolutions: CONV_2D with groups == input channels -> DEPTHWISE_CONV_2D.

The filter keeps its layout (torch (O, 1, KH, KW) in an NCHW graph); `multiplier` = O / C.
"""

from __future__ import annotations

from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_ir.passes.rewrite import PassResult, Rewriter


def mark_depthwise(graph: Graph) -> PassResult:
    if graph.layout != "NCHW":  # an NHWC graph's filters are already in Neuron's layouts
        return PassResult(graph, False)
    rw = Rewriter(graph)
    for op in rw:
        groups = op.attrs.get("groups", 1)
        channels = graph.tensors[op.inputs[0]].shape[1] if op.kind is OpKind.CONV_2D else 0
        if op.kind is OpKind.CONV_2D and groups > 1 and groups == channels:
            out_ch = graph.tensors[op.outputs[0]].shape[1]
            attrs = {k: v for k, v in op.attrs.items() if k != "groups"}
            rw.emit(
                op.with_(
                    kind=OpKind.DEPTHWISE_CONV_2D, attrs={**attrs, "multiplier": out_ch // channels}
                )
            )
        else:
            rw.emit(op)
    return rw.finish()
