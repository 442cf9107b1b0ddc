"""The resource budget of a manifest: what a file may make a reader, the engine or the emulator
allocate, checked by both readers before anything is allocated from header-claimed sizes.

    max_tensor_bytes   one operand's elements x element size          --max-tensor-mb
    max_total_bytes    the sum over all operands (constants and       --max-total-mb
                       activations: what the emulator allocates)
    max_header_values  msgpack values in the header (each map key     --max-header-values
                       counts), checked while decoding

The defaults leave a wide margin over every model the project builds (ResNet-50 and
Inception-v3 at 299x299 hold under 100 MB of tensors and under 100k header values; the lipread
frontend 6.8 MB and 1,753 values) and refuse a file that claims gigabytes. `workbench run` and
`mdla-engine` take the same flags (MiB for the sizes) and pass them on; the C reader has the same
defaults (csrc/manifest.h: MDLA_DEFAULT_*).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class Budget:
    max_tensor_bytes: int = 256 * MIB
    max_total_bytes: int = 1024 * MIB
    max_header_values: int = 1 << 20
    UNLIMITED: ClassVar[Budget]

    @classmethod
    def of(
        cls,
        max_tensor_mb: int | None = None,
        max_total_mb: int | None = None,
        max_header_values: int | None = None,
    ) -> Budget:
        """The defaults, with each limit that is given replaced (sizes in MiB)."""
        d = cls()
        return cls(
            d.max_tensor_bytes if max_tensor_mb is None else max_tensor_mb * MIB,
            d.max_total_bytes if max_total_mb is None else max_total_mb * MIB,
            d.max_header_values if max_header_values is None else max_header_values,
        )

    def engine_args(self) -> list[str]:
        """The mdla-engine flags for the limits that differ from the defaults."""
        d, args = Budget(), []
        if self.max_tensor_bytes != d.max_tensor_bytes:
            args += ["--max-tensor-mb", str(-(-self.max_tensor_bytes // MIB))]
        if self.max_total_bytes != d.max_total_bytes:
            args += ["--max-total-mb", str(-(-self.max_total_bytes // MIB))]
        if self.max_header_values != d.max_header_values:
            args += ["--max-header-values", str(self.max_header_values)]
        return args


DEFAULT = Budget()
Budget.UNLIMITED = Budget(1 << 62, 1 << 62, (1 << 32) - 1)  # for a file the writer just made
