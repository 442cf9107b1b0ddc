"""The resource budget of a manifest: what a file may make a reader, the engine or the emulator
allocate, checked by both readers before anything is allocated from header-claimed sizes.

    max_tensor_bytes   one operand's elements x element size          --max-tensor-mb
    max_total_bytes    the sum over all operands (constants and       --max-total-mb
                       activations: what the emulator allocates)
    max_header_values  msgpack values in the header (each map key     --max-header-values
                       counts), checked while decoding
    max_op_ops         one operation's multiply-adds or compares,      --max-op-gops
                       from the shapes (`compute.py`)
    max_total_ops      their sum over all operations                   --max-total-gops

The defaults leave a wide margin over every model the project builds (ResNet-50 and
Inception-v3 at 299x299 hold under 100 MB of tensors and under 100k header values; the lipread
frontend 6.8 MB and 1,753 values; ResNet-50 about 4 G multiply-adds, its largest layer 0.1 G)
and refuse a file that claims gigabytes or hours (a 960-byte MAX_POOL with a 384x384 window
on 768x768x32 needs 7 x 10^11 compares). `workbench run` and `mdla-engine` take the same
flags (MiB for the sizes, billions for the work) and pass them on; the C reader has the same
defaults (csrc/format/manifest.h: MDLA_DEFAULT_*).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

MIB = 1 << 20
GIGA = 10**9


@dataclass(frozen=True, slots=True)
class Budget:
    max_tensor_bytes: int = 256 * MIB
    max_total_bytes: int = 1024 * MIB
    max_header_values: int = 1 << 20
    max_op_ops: int = 16 * GIGA
    max_total_ops: int = 256 * GIGA
    UNLIMITED: ClassVar[Budget]

    @classmethod
    def of(
        cls,
        max_tensor_mb: int | None = None,
        max_total_mb: int | None = None,
        max_header_values: int | None = None,
        max_op_gops: int | None = None,
        max_total_gops: int | None = None,
    ) -> Budget:
        """The defaults, with each limit that is given replaced (sizes in MiB, work in
        billions of multiply-adds or compares)."""
        d = cls()
        return cls(
            d.max_tensor_bytes if max_tensor_mb is None else max_tensor_mb * MIB,
            d.max_total_bytes if max_total_mb is None else max_total_mb * MIB,
            d.max_header_values if max_header_values is None else max_header_values,
            d.max_op_ops if max_op_gops is None else max_op_gops * GIGA,
            d.max_total_ops if max_total_gops is None else max_total_gops * GIGA,
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
        if self.max_op_ops != d.max_op_ops:
            args += ["--max-op-gops", str(-(-self.max_op_ops // GIGA))]
        if self.max_total_ops != d.max_total_ops:
            args += ["--max-total-gops", str(-(-self.max_total_ops // GIGA))]
        return args


DEFAULT = Budget()
# for a file the writer just made
Budget.UNLIMITED = Budget(1 << 62, 1 << 62, (1 << 32) - 1, 1 << 64, 1 << 64)
