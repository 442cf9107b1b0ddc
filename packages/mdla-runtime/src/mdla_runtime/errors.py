"""The package's errors: `ManifestError` (a .mdla file or its lowering) and `TargetError`.

Every manifest error names the header field (`operands[3].dims`) and the byte offset in the file
where the reader found the problem, so a corrupt file can be inspected with a hex dump. The C
reader (csrc/format/manifest.c) reports the same kinds, under the same class names, for the
same files.
"""

from __future__ import annotations

# the C build is the emulator's (mdla_emu.build): one error for both
from mdla_emu.build import BuildError as BuildError


class ManifestError(ValueError):
    """A malformed .mdla file (or a graph that cannot be lowered to one)."""

    @property
    def kind(self) -> str:
        """The class name without `Error` (`BadMagic`): the C reader reports the same kinds."""
        return type(self).__name__.removesuffix("Error")

    def __init__(self, field: str, offset: int | None, why: str) -> None:
        where = f" at byte {offset}" if offset is not None else ""
        super().__init__(f"{self.kind}: `{field}`{where}: {why}")
        self.field = field
        self.offset = offset
        self.why = why
        self.path: str | None = None

    def in_file(self, path: object) -> ManifestError:
        """This error, its message prefixed with the file it is about (`m.mdla: BadHeader: ...`)."""
        if self.path is None:
            self.path = str(path)
            self.args = (f"{self.path}: {self.args[0]}",)
        return self


class BadMagicError(ManifestError):
    """The file does not start with the .mdla magic bytes."""


class FutureVersionError(ManifestError):
    """The format version is newer (or older) than this reader."""


class HeaderTooLargeError(ManifestError):
    """The header length exceeds the 64 MiB bound."""


class TruncatedHeaderError(ManifestError):
    """The file ends inside the preamble or the header."""


class BadHeaderError(ManifestError):
    """The msgpack header is malformed or breaks the schema."""


class BadPaddingError(ManifestError):
    """The bytes between header and data are not zero."""


class TruncatedDataError(ManifestError):
    """The file ends before the end of the data section."""


class OffsetOutOfBoundsError(ManifestError):
    """A data slice reaches outside the data section."""


class MisalignedError(ManifestError):
    """A data slice does not start on a 64-byte boundary."""


class OverlappingSlicesError(ManifestError):
    """Two data slices share bytes."""


class CountMismatchError(ManifestError):
    """A length or count disagrees with what it describes."""


class UnknownTypeCodeError(ManifestError):
    """An operand's Neuron type code is not supported."""


class UnknownOpCodeError(ManifestError):
    """An operation's code is not a Neuron operation."""


class DimsOverflowError(ManifestError):
    """An operand's dims are too many or their product overflows."""


class OperandCountMismatchError(ManifestError):
    """An operation has a number of operands its Neuron op cannot take."""


class BadIndexError(ManifestError):
    """An operand index points past the operand list."""


class DuplicateEntryError(ManifestError):
    """An operand listed twice where it may appear once (`outputs`, `inputs`, op outputs)."""


class BadPermutationError(ManifestError):
    """An I/O entry's `perm` is not a permutation of 0..n-1 with n >= the operand's rank."""


class ShapeMismatchError(ManifestError):
    """An I/O entry's `shape` or `model_shape` disagrees with its operand's dims."""


class BadQuantizationError(ManifestError):
    """A scale that is not a finite float32 > 0, or a zero point outside its type's range."""


class BadReferenceError(ManifestError):
    """An operand index names an operand of the wrong kind (a constant written, a value read
    before it is written, a non-int8 model input)."""


class PartitionCycleError(ManifestError):
    """A partition reads an operand that its own or a later partition writes: partitions run in
    list order, so that input would never be ready (a cycle between partitions)."""


class OverBudgetError(ManifestError):
    """The file asks for more than the resource budget allows (`Budget`; a flag raises it)."""


class NonFiniteError(ManifestError):
    """A float32 constant (a scalar's value, an element of a tensor's data) is NaN or +-inf."""


class LoweringError(ManifestError):
    """The graph cannot be lowered to Neuron operands."""


ALL_KINDS: tuple[type[ManifestError], ...] = (
    BadMagicError,
    FutureVersionError,
    HeaderTooLargeError,
    TruncatedHeaderError,
    BadHeaderError,
    BadPaddingError,
    TruncatedDataError,
    OffsetOutOfBoundsError,
    MisalignedError,
    OverlappingSlicesError,
    CountMismatchError,
    UnknownTypeCodeError,
    UnknownOpCodeError,
    DimsOverflowError,
    OperandCountMismatchError,
    BadIndexError,
    DuplicateEntryError,
    BadPermutationError,
    ShapeMismatchError,
    BadQuantizationError,
    BadReferenceError,
    PartitionCycleError,
    OverBudgetError,
    NonFiniteError,
)


class TargetError(RuntimeError):
    """A target (emulator, local adapter, phone) failed: carries the Neuron result and the op."""

    def __init__(
        self,
        message: str,
        result: str | None = None,
        op_index: int | None = None,
        op_name: str | None = None,
        exit_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.result = result
        self.op_index = op_index
        self.op_name = op_name
        self.exit_code = exit_code


class TargetSpecError(TargetError):
    """A malformed target spec (`--on`): a usage error, exit 2, before anything is contacted."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=2)
