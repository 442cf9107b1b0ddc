"""A malformed `ssh://` spec is a usage error (TargetSpecError, exit 2) found before any
connection: a relative `base=`, control characters, a destination that would be an ssh option."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mdla_runtime import TargetError, TargetSpecError, open_target
from mdla_runtime.engine.ssh import parse_spec
from workbench.cli import app


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("ssh://", "expected ssh://user@host"),
        ("ssh://phone:notaport", "bad SSH target"),
        ("ssh://phone?colour=red", "unknown option"),
        ("ssh://phone?env=oops", "expected env=NAME=VALUE"),
        ("ssh://phone?timeout=soon", "timeout='soon': expected seconds, more than 0"),
        ("ssh://phone?timeout=nan", "timeout='nan': expected seconds"),
        ("ssh://phone?timeout=inf", "timeout='inf': expected seconds"),
        ("ssh://phone?timeout=1e400", "timeout='1e400': expected seconds"),
        ("ssh://phone?timeout=-1", "timeout='-1': expected seconds"),
        ("ssh://phone?timeout=0", "timeout='0': expected seconds"),
        ("ssh://phone?stale=-5", "stale='-5': expected whole minutes"),
        ("ssh://phone?stale=" + "9" * 5000, "expected whole minutes"),
        ("ssh://phone?base=relative/dir", "not an absolute path"),
        ("ssh://phone?base=/tmp/a%0Atouch%20/tmp/PWNED", "control character"),
        ("ssh://phone?base=/tmp/a%09b", "control character"),
        ("ssh://phone?lib=/x.so%0Aid", "control character"),
        ("ssh://phone?env=A=1%0Aid", "control character"),
        ("ssh://-oProxyCommand=touch%20x@phone", "may not start with '-'"),
    ],
)
def test_malformed_specs_are_usage_errors(spec: str, message: str) -> None:
    with pytest.raises(TargetSpecError, match=message) as info:
        parse_spec(spec)
    assert isinstance(info.value, TargetError)
    assert info.value.exit_code == 2


def test_a_timeout_in_bounds_is_taken() -> None:
    assert parse_spec("ssh://phone?timeout=2.5").timeout == 2.5
    assert parse_spec("ssh://phone").timeout == 120.0


def test_a_valid_base_with_metacharacters_is_accepted_as_data() -> None:
    spec = parse_spec("ssh://u@phone?base=/tmp/x%3Btouch%20/tmp/PWNED")
    assert spec.base == "/tmp/x;touch /tmp/PWNED"


def test_open_target_unknown_scheme_is_usage() -> None:
    with pytest.raises(TargetSpecError, match="unknown target"):
        open_target("tcp://x")


@pytest.mark.parametrize(
    "spec",
    [
        "ssh://",
        "ssh://phone?base=rel",
        "ssh://phone?colour=red",
        "tcp://phone",
        "ssh://phone?timeout=nan",
        "ssh://phone?timeout=-1",
    ],
)
def test_devices_with_a_bad_on_exits_2(spec: str) -> None:
    result = CliRunner().invoke(app, ["devices", "--on", spec])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ")
