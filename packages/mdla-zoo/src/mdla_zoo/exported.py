"""An exported program's aten graph -> the torch-level fx graph the importer takes.

`torch.export` (and torch's TorchScript converter) give a GraphModule whose nodes call aten
operator overloads (`aten.conv2d.default`, `aten.batch_norm.default`, ...) on get_attr
parameters. Each rule below names the torch function that the aten overload *is*: the Python
function (`F.conv2d`) dispatches to exactly that overload with the same arguments in the same
order, so the rewrite changes no arithmetic. `batch_norm` becomes an eval-mode
`nn.BatchNorm2d` holding the same four tensors (the importer folds that module into its conv);
`clone`/`contiguous`/`alias` are the identity on values and are dropped; shape guards and
metadata asserts have no users and no values and are dropped. Any other aten op is named in one
error rather than passed on.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from torch import fx, nn

from mdla_zoo.errors import ZooError

aten = torch.ops.aten
Args = tuple[Any, ...]
Kwargs = dict[str, Any]


def _same(target: Callable[..., Any]) -> Callable[[Args, Kwargs], tuple[Any, Args, Kwargs]]:
    return lambda a, k: (target, a, k)


def _binary(target: Callable[..., Any]) -> Callable[[Args, Kwargs], tuple[Any, Args, Kwargs]]:
    def rule(a: Args, k: Kwargs) -> tuple[Any, Args, Kwargs]:
        if k.get("alpha", 1) != 1:
            raise ZooError(f"aten add/sub with alpha={k['alpha']} is not imported")
        return target, a[:2], {}

    return rule


def _max_pool(a: Args, k: Kwargs) -> tuple[Any, Args, Kwargs]:
    # aten writes stride=[] for "the kernel size"; F.max_pool2d spells that stride=None.
    args = list(a)
    if len(args) > 2 and not args[2]:
        args[2] = None
    return F.max_pool2d, tuple(args), k


def _convolution(a: Args, k: Kwargs) -> tuple[Any, Args, Kwargs]:
    # convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    # the overload F.conv2d reaches for a 2-D, non-transposed convolution
    x, w, b, stride, padding, dilation, transposed, _out_pad, groups = a[:9]
    if transposed or len(stride) != 2:
        raise ZooError("aten.convolution: only 2-D non-transposed convolutions are imported")
    return F.conv2d, (x, w, b, tuple(stride), tuple(padding), tuple(dilation), groups), {}


def _pad(a: Args, k: Kwargs) -> tuple[Any, Args, Kwargs]:
    # constant_pad_nd(x, pad, value) = F.pad(x, pad, "constant", value)
    value = a[2] if len(a) > 2 else k.get("value", 0.0)
    return F.pad, (a[0], a[1], "constant", value), {}


RULES: dict[Any, Callable[[Args, Kwargs], tuple[Any, Args, Kwargs]]] = {
    aten.conv2d.default: _same(F.conv2d),  # aten.conv2d(x, w, b, s, p, d, g) -> F.conv2d
    aten.convolution.default: _convolution,  # aten.convolution(.., False, .., g) -> F.conv2d
    aten.linear.default: _same(F.linear),  # aten.linear(x, w, b) -> F.linear
    aten.relu.default: _same(torch.relu),  # aten.relu(x) -> torch.relu
    aten.hardtanh.default: _same(F.hardtanh),  # aten.hardtanh(x, lo, hi) -> F.hardtanh
    aten.sigmoid.default: _same(torch.sigmoid),  # aten.sigmoid(x) -> torch.sigmoid
    aten.tanh.default: _same(torch.tanh),  # aten.tanh(x) -> torch.tanh
    aten.silu.default: _same(F.silu),  # aten.silu(x) -> F.silu
    aten.hardswish.default: _same(F.hardswish),  # aten.hardswish(x) -> F.hardswish
    aten.hardsigmoid.default: _same(F.hardsigmoid),  # aten.hardsigmoid(x) -> F.hardsigmoid
    aten.gelu.default: _same(F.gelu),  # aten.gelu(x, approximate=) -> F.gelu
    aten.leaky_relu.default: _same(F.leaky_relu),  # aten.leaky_relu(x, slope) -> F.leaky_relu
    aten.add.Tensor: _binary(operator.add),  # aten.add(x, y) -> x + y
    aten.sub.Tensor: _binary(operator.sub),  # aten.sub(x, y) -> x - y
    aten.mul.Tensor: _same(operator.mul),  # aten.mul(x, y) -> x * y
    aten.div.Tensor: _same(operator.truediv),  # aten.div(x, y) -> x / y
    aten.cat.default: _same(torch.cat),  # aten.cat(xs, dim) -> torch.cat
    aten.flatten.using_ints: _same(torch.flatten),  # aten.flatten(x, s, e) -> torch.flatten
    aten.view.default: _same(torch.reshape),  # aten.view(x, shape) -> torch.reshape
    aten.reshape.default: _same(torch.reshape),  # aten.reshape(x, shape) -> torch.reshape
    aten.permute.default: _same(torch.permute),  # aten.permute(x, dims) -> torch.permute
    aten.transpose.int: _same(torch.transpose),  # aten.transpose(x, a, b) -> torch.transpose
    aten.mean.dim: _same(torch.mean),  # aten.mean(x, dims, keepdim) -> torch.mean
    aten.softmax.int: _same(torch.softmax),  # aten.softmax(x, dim) -> torch.softmax
    aten.dropout.default: _same(F.dropout),  # aten.dropout(x, p, train) -> F.dropout
    aten.adaptive_avg_pool2d.default: _same(F.adaptive_avg_pool2d),  # -> F.adaptive_avg_pool2d
    aten.avg_pool2d.default: _same(F.avg_pool2d),  # aten.avg_pool2d(x, k, s, p, ...) -> same
    aten.max_pool2d.default: _max_pool,  # aten.max_pool2d(x, k, [], p, d, c) -> F.max_pool2d
    aten.pad.default: _same(F.pad),  # aten.pad(x, pad, mode, value) -> F.pad
    aten.constant_pad_nd.default: _pad,  # aten.constant_pad_nd(x, pad, v) -> F.pad constant
    aten.matmul.default: _same(torch.matmul),  # aten.matmul(x, y) -> torch.matmul
}
IDENTITIES = {aten.clone.default, aten.contiguous.default, aten.alias.default}


def torch_level(gm: fx.GraphModule, where: str) -> fx.GraphModule:
    """A new GraphModule over `gm`'s parameters whose nodes call torch functions and modules."""
    graph = fx.Graph()
    env: dict[fx.Node, Any] = {}
    unknown: list[str] = []
    bn_count = 0
    for node in gm.graph.nodes:
        if node.op == "call_module" and str(node.target).startswith("_guards"):
            continue
        if any(n not in env for n in node.all_input_nodes):
            continue  # fed by an unknown op (named below) or by a dropped guard
        if node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator):
            unknown.append(f"{node.target} (`{node.name}`: control flow)")
            continue
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            op = node.target
            if not node.users and (str(op).startswith("aten._assert") or op in IDENTITIES):
                continue
            if op in IDENTITIES:
                env[node] = env[node.args[0]]
                continue
            args = fx.map_arg(node.args, lambda n: env[n])
            kwargs = fx.map_arg(dict(node.kwargs), lambda n: env[n])
            if op is aten.batch_norm.default:
                bn_count += 1
                name = f"_mdla_bn{bn_count}"
                gm.add_submodule(name, _batch_norm(gm, node, where))
                env[node] = graph.call_module(name, (args[0],))
                continue
            rule = RULES.get(op)
            if rule is None:
                unknown.append(f"{op} (`{node.name}`)")
                continue
            target, new_args, new_kwargs = rule(tuple(args), dict(kwargs))
            env[node] = graph.create_node(
                "call_function", target, new_args, new_kwargs, name=node.name
            )
            continue
        if node.op == "output":
            if unknown:
                break
            (result,) = node.args
            if isinstance(result, list | tuple) and len(result) == 1:
                result = result[0]
            graph.output(fx.map_arg(result, lambda n: env[n]))
            continue
        env[node] = graph.node_copy(node, lambda n: env[n])
    if unknown:
        raise ZooError(
            f"`{where}` uses aten ops this importer does not take: {', '.join(unknown[:4])}"
            f"{f' and {len(unknown) - 4} more' if len(unknown) > 4 else ''}; compile the Python "
            "model instead (`my_net.py:Net --weights state.pt`)"
        )
    for unused in [n for n in graph.nodes if n.op == "get_attr" and not n.users]:
        graph.erase_node(unused)  # the parameters a batch_norm module now holds
    graph.lint()
    return fx.GraphModule(gm, graph, class_name="Exported")


def _batch_norm(gm: fx.GraphModule, node: fx.Node, where: str) -> nn.Module:
    """aten.batch_norm(x, w, b, mean, var, training, momentum, eps, cudnn) in eval mode as an
    nn.BatchNorm2d with those tensors: (x - mean) / sqrt(var + eps) * w + b either way."""
    _x, w, b, mean, var, training, _momentum, eps = node.args[:8]
    if training:
        raise ZooError(f"`{where}` was exported in training mode: export model.eval()")
    tensors = [_const(gm, t) for t in (w, b, mean, var)]
    weight, bias, run_mean, run_var = tensors
    if run_mean is None or run_var is None:
        raise ZooError(f"`{where}`: batch_norm `{node.name}` has no running statistics")
    bn = nn.BatchNorm2d(run_mean.numel(), eps=float(eps), affine=weight is not None)  # type: ignore[arg-type]
    with torch.no_grad():
        bn.running_mean.copy_(run_mean)  # type: ignore[union-attr]
        bn.running_var.copy_(run_var)  # type: ignore[union-attr]
        if weight is not None:
            bn.weight.copy_(weight)
            bn.bias.copy_(bias if bias is not None else torch.zeros_like(weight))
    return bn.eval()


def _const(gm: fx.GraphModule, arg: Any) -> torch.Tensor | None:
    if arg is None:
        return None
    if not isinstance(arg, fx.Node) or arg.op != "get_attr":
        raise ZooError(f"batch_norm parameter `{arg}` is computed, not a constant")
    value: Any = gm
    for part in str(arg.target).split("."):
        value = getattr(value, part)
    return value.detach() if isinstance(value, torch.Tensor) else None
