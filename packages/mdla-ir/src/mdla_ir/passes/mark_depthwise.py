"""Mark depthwise convolutions: CONV_2D with groups == input channels -> DEPTHWISE_CONV_2D.

The filter keeps its layout (torch (O, 1, KH, KW) in an NCHW graph); `multiplier` = O / C.
"""

from __future__ import annotations

import dataclasses

from mdla_ir.attrs import ConvAttrs
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_ir.passes.rewrite import PassResult, Rewriter


def mark_depthwise(graph: Graph) -> PassResult:
    if graph.layout != "NCHW":  # an NHWC graph's filters are already in Neuron's layouts
        return PassResult(graph, False)
    rw = Rewriter(graph)
    for op in rw:
        if op.kind is not OpKind.CONV_2D:
            rw.emit(op)
            continue
        a, channels = ConvAttrs.of(op), graph.tensors[op.inputs[0]].shape[1]
        if a.groups > 1 and a.groups == channels:
            out_ch = graph.tensors[op.outputs[0]].shape[1]
            dw = dataclasses.replace(a, groups=1, multiplier=out_ch // channels)
            rw.emit(op.with_(kind=OpKind.DEPTHWISE_CONV_2D, attrs=dw))
        else:
            rw.emit(op)
    return rw.finish()
