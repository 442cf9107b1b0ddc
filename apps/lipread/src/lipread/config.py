"""LipNet sizes: the published LipNet-PyTorch model and the small synthetic demo model.

Both have LipNet-PyTorch's layers and key names (conv1..3, gru1, gru2, FC); the demo model only
narrows the channels and the GRU and reads smaller crops so it trains on a CPU in minutes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from lipread.grid import NUM_CLASSES


@dataclass(frozen=True, slots=True)
class LipNetConfig:
    height: int = 64
    width: int = 128
    conv1: int = 32
    conv2: int = 64
    conv3: int = 96
    hidden: int = 256
    classes: int = NUM_CLASSES

    @property
    def feature_hw(self) -> tuple[int, int]:
        """Spatial size after the three stages: conv1 strides 2, each pool halves (floor)."""
        h, w = (self.height + 4 - 5) // 2 + 1, (self.width + 4 - 5) // 2 + 1
        for _ in range(3):
            h, w = h // 2, w // 2
        return h, w

    @property
    def features(self) -> int:
        h, w = self.feature_hw
        return self.conv3 * h * w

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every state-dict key of LipNet-PyTorch and its shape for this size."""
        out: dict[str, tuple[int, ...]] = {
            "conv1.weight": (self.conv1, 3, 3, 5, 5),
            "conv1.bias": (self.conv1,),
            "conv2.weight": (self.conv2, self.conv1, 3, 5, 5),
            "conv2.bias": (self.conv2,),
            "conv3.weight": (self.conv3, self.conv2, 3, 3, 3),
            "conv3.bias": (self.conv3,),
        }
        for name, n_in in (("gru1", self.features), ("gru2", 2 * self.hidden)):
            for sfx in ("", "_reverse"):
                out[f"{name}.weight_ih_l0{sfx}"] = (3 * self.hidden, n_in)
                out[f"{name}.weight_hh_l0{sfx}"] = (3 * self.hidden, self.hidden)
                out[f"{name}.bias_ih_l0{sfx}"] = (3 * self.hidden,)
                out[f"{name}.bias_hh_l0{sfx}"] = (3 * self.hidden,)
        out["FC.weight"] = (self.classes, 2 * self.hidden)
        out["FC.bias"] = (self.classes,)
        return out

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


PUBLISHED = LipNetConfig()  # LipNet-PyTorch HEAD: 64x128 BGR crops, 6,638,844 parameters
PUBLISHED_50X100 = LipNetConfig(height=50, width=100)  # the earlier 50x100 checkpoints
DEMO = LipNetConfig(height=32, width=64, conv1=8, conv2=16, conv3=24, hidden=64)
