"""The SSH target: run `mdla-engine` on a phone reached with the system OpenSSH client.

    ssh://user@host[:port][?su=1&key=PATH&config=PATH&lib=PATH&libpath=DIRS&engine=PATH
                           &env=NAME=VALUE&base=DIR&timeout=S&stale=MINUTES]

`~/.ssh/config`, keys, agents and jump hosts apply as for `ssh`; every command runs over one
multiplexed connection (ControlMaster), so a witness read costs milliseconds, not a handshake.
On open: a private directory on the phone ($HOME/.cache/mdla, else a 0700 `mdla-<uid>` under
$TMPDIR, /data/local/tmp or /tmp, or `<base>/mdla-cache`), checked to be the user's own and
not writable by others; a session work directory inside it (those of dead sessions are removed:
by liveness, or after `stale` minutes for one that never registered); the engine (a prebuilt
`engine=` binary for the phone's architecture, or its C sources built with the phone's
cc/clang/gcc in the session's directory), cached by content and verified by sha256 before every
run; and the adapter (`lib=`, else found under /vendor/lib64/<soc> and /vendor/lib64, run with
that LD_LIBRARY_PATH unless `libpath=` says otherwise). `su=1` runs the engine and the witness
reads through `su -c`. Remote paths and options reach the phone's shell only as quoted
arguments of fixed scripts (`remote.py`). Every remote step has a timeout; `close()` removes
the work directory.

    spec.py     parse_spec, SshSpec          remote.py   the remote scripts, quoting
    session.py  the remote work directory    control.py  the local ControlMaster directory
    cache.py    the engine on the phone      target.py   SshTarget
"""

from mdla_runtime.engine.ssh.spec import SshSpec, parse_spec
from mdla_runtime.engine.ssh.target import SshTarget

__all__ = ["SshSpec", "SshTarget", "parse_spec"]
