"""The legalizer's errors: one base, carrying every item it is about (not only the first)."""

from __future__ import annotations

from mdla_target import Target, UnknownDeviceError


class LegalizeError(Exception):
    """Base error of mdla_legalize; `items` lists each offending op or name, one line each;
    `advice` what would make it pass (`legalize`: the `--cpu` list, then a better pattern list
    where there is one; the message holds the first)."""

    def __init__(
        self, message: str, items: list[str] | None = None, advice: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message)
        self.items = list(items or [])
        self.advice = advice


class UnknownRuleError(LegalizeError):
    """`skip_rules` names a rule (or pass) legalize does not have; `items` lists the unknown
    names, `known` every name it accepts."""

    def __init__(self, message: str, items: list[str], known: list[str]) -> None:
        super().__init__(message, items)
        self.known = list(known)


def check_device(target: Target, device: str) -> None:
    """`target` has `device`, else a LegalizeError naming the devices it has."""
    try:
        target.device(device)
    except UnknownDeviceError as exc:
        raise LegalizeError(str(exc), [device]) from exc
