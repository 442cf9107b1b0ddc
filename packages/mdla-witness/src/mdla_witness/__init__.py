"""mdla_witness: prove the NPU ran (stdlib only, importable on a phone without torch).

    nodes = mdla_witness.find_power_nodes()                 # APU runtime-PM nodes + readings
    w = mdla_witness.witness(lambda: target.run(m, xs))      # idle control, run, verdict
    print(w.verdict)        # "witnessed" | "not witnessed" | "cannot witness: <why>"

`shell=` runs every read elsewhere (the SSH target passes one that runs on the phone).
"""

from __future__ import annotations

from mdla_witness.errors import WitnessError
from mdla_witness.nodes import PowerNode, Reading, find_power_nodes, local_shell, read_nodes
from mdla_witness.protocol import Witness, witness

__all__ = [
    "PowerNode",
    "Reading",
    "Witness",
    "WitnessError",
    "find_power_nodes",
    "local_shell",
    "read_nodes",
    "witness",
]
