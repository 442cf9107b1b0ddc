"""The shipped target's name and the Neuron device names, each written once.

`mdla_target` re-exports them; every floor (the provenance defaults here, legalize, the
runtime, the apps' option defaults) uses these constants, never the literals.
"""

from __future__ import annotations

DEFAULT_TARGET = "mdla3.5"  # mdla_target/targets/mdla3.5.toml: the MDLA 3.5 (MT6886)
NPU = "mtk-mdla"  # the MDLA, as the Neuron adapter names its device
GPU = "mtk-gpu"
DSP = "mtk-dsp"
DEVICES = (NPU, GPU, DSP)
