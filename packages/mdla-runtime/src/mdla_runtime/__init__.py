"""mdla_runtime: the .mdla manifest, the C engine on the Neuron ABI and the host emulator.

mdla_runtime.export_tflite(qgraph, "model.tflite")   # int8 NHWC graph -> .tflite (LiteRT)
"""

from __future__ import annotations

from mdla_runtime.tflite import ExportError, export_tflite

__all__ = ["ExportError", "export_tflite"]
