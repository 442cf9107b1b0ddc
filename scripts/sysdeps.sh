#!/usr/bin/env bash
# The Debian packages the test suite needs, installed when missing (make test runs this first):
#   clang                  libFuzzer + ASan/UBSan builds of the C manifest reader and engine
#   gcc-aarch64-linux-gnu  the engine and emulator cross-built for the phone's CPU
#   qemu-user              ... and run under qemu-aarch64
#   valgrind               leak checks of the engine and the emulator
#   openssh-server         the loopback "phone" of the SSH target tests
#   libgl1, libglib2.0-0   libGL.so.1 and libglib-2.0.so.0, which opencv-python (ultralytics') loads
set -euo pipefail
need=()
command -v clang >/dev/null || need+=(clang)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
command -v valgrind >/dev/null || need+=(valgrind)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
libs="$(PATH="$PATH:/sbin:/usr/sbin" ldconfig -p 2>/dev/null || true)"
[[ $libs == *'libGL.so.1 '* ]] || need+=(libgl1)
[[ $libs == *'libglib-2.0.so.0 '* ]] || need+=(libglib2.0-0)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$EUID" != 0 ] && ! command -v sudo >/dev/null; then
  echo "error: the tests need the Debian packages ${need[*]}; as root: apt-get install -y ${need[*]}" >&2
  exit 1
fi
SUDO=$([ "$EUID" = 0 ] && echo "" || echo sudo)
echo "installing Debian packages the tests need: ${need[*]}"
$SUDO apt-get update -q >/dev/null
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}" >/dev/null
