"""The rule tables of mdla_legalize, in the order `legalize` applies them.

MODEL_RULES run on the graph in the model's layout (semantic rewrites), DEVICE_RULES on the NHWC
device graph (frames, padding). Every rule: `(pattern, fn)`, one line, `# before -> after`.
"""

from mdla_legalize.rules.activations import ACTIVATIONS, PATTERNS
from mdla_legalize.rules.base import Ctx, Rule, RuleFn, apply_table, pat, rule_names, single
from mdla_legalize.rules.channels import COSTS, GROUPS, SELECTIONS
from mdla_legalize.rules.clamp import CLAMP
from mdla_legalize.rules.detect import DETECT
from mdla_legalize.rules.flatten import FLATTEN
from mdla_legalize.rules.frames import FRAMES, squeeze_boundary
from mdla_legalize.rules.heads import POOLS
from mdla_legalize.rules.lift import LIFT
from mdla_legalize.rules.movement import MOVEMENT
from mdla_legalize.rules.padding import PADDING
from mdla_legalize.rules.radix import RADIX
from mdla_legalize.rules.reduce import REDUCE
from mdla_legalize.rules.requantize import REQUANTIZE
from mdla_legalize.rules.strided import COMPOSE, STRIDED
from mdla_legalize.rules.subtract import SUBTRACT

MODEL_RULES: list[Rule] = (
    FLATTEN
    + COMPOSE
    + GROUPS
    + SELECTIONS
    + RADIX
    + STRIDED
    + DETECT
    + PATTERNS
    + CLAMP
    + ACTIVATIONS
    + SUBTRACT
    + POOLS
    + LIFT
    + REQUANTIZE
)
DEVICE_RULES: list[Rule] = REDUCE + FRAMES + MOVEMENT + PADDING
ALL_RULES: list[Rule] = MODEL_RULES + DEVICE_RULES

__all__ = [
    "ACTIVATIONS",
    "ALL_RULES",
    "CLAMP",
    "COMPOSE",
    "COSTS",
    "DETECT",
    "DEVICE_RULES",
    "FLATTEN",
    "FRAMES",
    "GROUPS",
    "LIFT",
    "MODEL_RULES",
    "MOVEMENT",
    "PADDING",
    "PATTERNS",
    "POOLS",
    "RADIX",
    "REDUCE",
    "REQUANTIZE",
    "SELECTIONS",
    "STRIDED",
    "SUBTRACT",
    "Ctx",
    "Rule",
    "RuleFn",
    "apply_table",
    "pat",
    "rule_names",
    "single",
    "squeeze_boundary",
]
