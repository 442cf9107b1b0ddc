"""One line per construct the importer refuses: the fx node, the module it sits in (qualified
name and class), what it is, the model's source line, and what to change.

    `act` in `blocks.0.act` (torch.nn.modules.activation.Mish): module Mish (blocks.0.act) at
    net.py:12; fix: use SiLU or Hardswish (they map on the MDLA) and fine-tune

`--cpu` cannot help with these: the IR has no op for them, so there is nothing to place; the
fix is always a change to the model (or `.eval()`), named per construct where one is known.
"""

from __future__ import annotations

from torch import fx, nn

from mdla_ir.importer.context import Unsupported, source_line, target_name

SMOOTH = "use SiLU, Hardswish or ReLU (they map on the MDLA) and fine-tune"
NORM = "use BatchNorm2d (it folds into the convolution before it)"
# A module class name -> what to change it to (the importer has no op for it).
MODULE_FIXES = {
    "LocalResponseNorm": NORM,
    "ELU": SMOOTH,
    "CELU": SMOOTH,
    "SELU": SMOOTH,
    "Mish": SMOOTH,
    "Softplus": SMOOTH,
    "MultiheadAttention": "transformers are out on the MDLA: compile the convolutional part",
}
# A function or Tensor method (as `target_name` spells it) -> what to change it to.
FUNCTION_FIXES: dict[str, str] = {}
GENERIC = (
    "rewrite that line with layers and ops the importer maps (nn layers and their F.* forms, "
    "+ - * /, cat, reshape/view, permute, slicing with constant bounds); `--cpu` cannot place "
    "an op the IR cannot hold"
)


def owner(gm: fx.GraphModule, node: fx.Node, root: type) -> str:
    """`qualified.name` (module.Class) of the module the node is, or runs inside."""
    if node.op == "call_module":
        cls: object = type(gm.get_submodule(str(node.target)))
        qual = str(node.target)
    else:
        stack = node.meta.get("nn_module_stack") or {}
        if not stack:
            return f"the model's forward ({_class_name(root)})"
        qual, cls = next(reversed(stack.values()))
    return f"`{qual}` ({_class_name(cls)})"


def _class_name(cls: object) -> str:
    if isinstance(cls, type):
        return f"{cls.__module__}.{cls.__qualname__}"
    return str(cls)


def module_refusal(module: nn.Module) -> Unsupported:
    cls = type(module)
    return Unsupported(
        f"module {cls.__name__} has no converter",
        MODULE_FIXES.get(cls.__name__),
    )


def refusal(gm: fx.GraphModule, node: fx.Node, exc: Unsupported, root: type) -> str:
    """The report line of `node` (`root` is the imported model's class)."""
    line = source_line(node) or "unknown line"
    what, target = str(exc), target_name(node)
    if target not in what and node.op != "call_module":
        what += f" ({target})"
    fix = exc.fix or FUNCTION_FIXES.get(target, GENERIC)
    return f"`{node.name}` in {owner(gm, node, root)}: {what} at {line}; fix: {fix}"
