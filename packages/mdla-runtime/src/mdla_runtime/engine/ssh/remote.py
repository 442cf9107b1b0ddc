"""The shell scripts the SSH target runs on the phone: fixed text, variables only as arguments.

Every remote command is `sh -c SCRIPT mdla ARG...`, each word quoted for the login shell, so a
path or option (`base=`, `lib=`, file names) reaches the script as `$1`, `$2`, ... and is never
parsed as shell code. Scripts use POSIX sh and the tools of Android's toybox.

Layout on the phone, all inside one private directory (`$HOME/.cache/mdla`, else
`$TMPDIR|/data/local/tmp|/tmp/mdla-<uid>`, or `<base>/mdla-cache`; mode 0700, owned by the
user, not a symlink, checked before every session):

    engine-<sha256>        a built engine, named by the hash of its bytes
    sources-<key>          the sha256 of the engine built from the sources with this key
    prebuilt-<sha256>      an uploaded `engine=` binary
    work.XXXXXX/pid        one session: its uploads, outputs, build; `pid` is a process that
                           lives exactly as long as the session's connection
"""

from __future__ import annotations

import io
import shlex
import tarfile

from mdla_runtime.build import shell_build_script

# Exit statuses and markers the scripts use to tell the client what went wrong.
UNSAFE, NO_COMPILER, NO_SHA256 = "MDLA_UNSAFE", "MDLA_NO_COMPILER", "MDLA_NO_SHA256"
ENGINE_CHANGED, CHANGED_STATUS = "MDLA_ENGINE_CHANGED", 97

SHA256 = """sha256() {
  [ -f "$1" ] || return 0
  if command -v sha256sum >/dev/null 2>&1; then sha256sum
  elif command -v toybox >/dev/null 2>&1; then toybox sha256sum
  else shasum -a 256; fi < "$1" 2>/dev/null | { read -r h _ && echo "$h"; }
}
"""

# $1 base ('' for the default), $2 stale minutes. Checks the private dir, removes the work
# dirs of dead sessions, makes this session's, prints it, then stays alive (as `cat`) until
# the connection ends: its pid in work.*/pid is how other sessions know this one is live.
SESSION = r"""umask 077
unsafe() { printf 'MDLA_UNSAFE: %s %s\n' "$d" "$1" >&2; exit 5; }
if [ -n "$1" ]; then mkdir -p "$1" && d="$1/mdla-cache" || exit 5
elif [ -n "$HOME" ] && [ "$HOME" != / ] && mkdir -p "$HOME/.cache" 2>/dev/null; then
  d="$HOME/.cache/mdla"
else
  t=${TMPDIR:-/data/local/tmp}; [ -w "$t" ] || t=/tmp; d="$t/mdla-$(id -u)"
fi
mkdir -m 700 "$d" 2>/dev/null
[ -L "$d" ] && unsafe "is a symbolic link"
[ -d "$d" ] || unsafe "is not a directory and cannot be made one"
owner=$(stat -c %u "$d") && mode=$(stat -c %a "$d") || unsafe "cannot be checked (no stat)"
[ "$owner" = "$(id -u)" ] || unsafe "is owned by uid $owner, not by this user (uid $(id -u))"
case $mode in *[2367]? | *[2367]) unsafe "is writable by other users (mode $mode)";; esac
alive() {
  case $1 in '' | *[!0-9]*) return 1;; esac
  kill -0 "$1" 2>/dev/null || return 1
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  s=${s##*) }
  case $s in Z*) return 1;; esac
}
for w in "$d"/work.*; do
  [ -d "$w" ] && [ ! -L "$w" ] || continue
  if [ -f "$w/pid" ]; then alive "$(cat "$w/pid" 2>/dev/null)" && continue
  else [ -n "$(find "$w" -maxdepth 0 -mmin "+$2" 2>/dev/null)" ] || continue; fi
  rm -rf "$w"
done
w=$(mktemp -d "$d/work.XXXXXX") || exit 5
echo $$ > "$w/pid"
printf 'MDLA_SESSION %s\n' "$w"
exec cat >/dev/null
"""

# $1 private dir, $2 pointer file: the sha256 of the cached engine if its bytes still match.
CACHED = (
    SHA256
    + """h=$(cat "$2" 2>/dev/null) || exit 1
case $h in '' | *[!0-9a-f]*) exit 1;; esac
[ "$(sha256 "$1/engine-$h")" = "$h" ] && echo "$h"
"""
)

# stdin: a tar of the sources. $1 private dir, $2 work dir, $3 pointer file, $4... the .c files.
# Builds in the session's own directory, then renames the engine (named by its hash) and the
# pointer into the cache: concurrent builds never share a file, and readers never see half.
BUILD = (
    SHA256
    + """set -e
d=$1; w=$2; p=$3; shift 3
b="$w/build"; rm -rf "$b"; mkdir "$b"; cd "$b"; tar -xf -
"""
    + shell_build_script()  # the one recipe (mdla_runtime.build), its compiler order included
    + """h=$(sha256 mdla-engine)
[ -n "$h" ] || { echo "MDLA_NO_SHA256: no sha256sum on the phone" >&2; exit 3; }
mv -f mdla-engine "$d/engine-$h"
echo "$h" > "$w/pointer"; mv -f "$w/pointer" "$p"
cd "$w"; rm -rf "$b"; echo "$h"
"""
)

# stdin: the engine binary. $1 its cache path, $2 its sha256, $3 a file in the work dir.
UPLOAD_ENGINE = (
    SHA256
    + """[ "$(sha256 "$1")" = "$2" ] && exit 0
cat > "$3" && chmod 700 "$3" || exit 1
[ "$(sha256 "$3")" = "$2" ] || { echo "MDLA_NO_SHA256: the upload is not $2" >&2; exit 3; }
mv -f "$3" "$1"
"""
)

# $1 work dir, $2 engine, $3 its sha256, $4 LD_LIBRARY_PATH or '', then NAME=VALUE... `--`
# and the engine's arguments. The engine is hashed right before it runs; it runs beside a
# watcher of the session's stdin (saved as fd 3: background jobs get /dev/null): if the
# connection drops, stdin ends and the watcher kills the engine.
RUN = (
    SHA256
    + """cd "$1" && mkdir -p out || exit 1
[ "$(sha256 "$2")" = "$3" ] || { echo MDLA_ENGINE_CHANGED >&2; exit 97; }
e=$2
if [ -n "$4" ]; then LD_LIBRARY_PATH=$4; export LD_LIBRARY_PATH; fi
shift 4
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do export "$1"; shift; done
shift
exec 3<&0
"$e" "$@" & p=$!
(cat <&3; kill -9 $p) >/dev/null 2>&1 & k=$!
wait $p; rc=$?; kill $k 2>/dev/null; exit $rc
"""
)

UNTAR = 'cd "$1" && tar -xf -'  # never a path to tar: GNU tar unquotes backslashes
FETCH = 'cd "$1" && tar -cf - . && rm -rf ./*'
CAT = 'cat "$1"'
IS_FILE = 'test -f "$1"'
REMOVE = 'rm -rf "$1"'
# $@: glob patterns of adapter libraries; prints the files that exist.
FIND = """for g in "$@"; do for f in $g; do [ -f "$f" ] && printf '%s\\n' "$f"; done; done; true"""


def command(script: str, *args: str) -> str:
    """The remote command line running `script` with `args` as `$1`, `$2`, ...: every word
    quoted, so nothing in an argument is ever parsed by a shell."""
    return " ".join(shlex.quote(w) for w in ("sh", "-c", script, "mdla", *args))


def tar(files: dict[str, bytes]) -> bytes:
    """An uncompressed tar of `files` (name -> bytes), mode 0644."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()
