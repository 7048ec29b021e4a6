#!/usr/bin/env bash
# Installs every Debian package Ember's build, tests, demo and benchmarks need.
# Idempotent: when everything is already installed it prints nothing and does not touch apt.
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ clang clang-format libclang-rt-14-dev
  # runtime headers (used header-only, never linked)
  libdlpack-dev libdmlc-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # compiler: LLVM 19 code generation, lld as the one linker, ONNX import; `lld` gives the
  # runtime's link the plain ld.lld (identical-code folding keeps it under 300 KB)
  llvm-19 llvm-19-dev lld-19 lld libzstd-dev libonnx-dev libprotobuf-dev protobuf-compiler
  # python front end, conformance corpus, model generator
  python3 python3-numpy python3-onnx python3-pytest python3-pytest-xdist python3-setuptools
  # ARM cross builds and qemu-user test runs
  gcc-aarch64-linux-gnu g++-aarch64-linux-gnu gcc-arm-linux-gnueabihf g++-arm-linux-gnueabihf qemu-user
  # install checks: an app built against the prefix with pkg-config, the .deb packages, python venvs
  pkgconf dpkg-dev python3-venv python3-pip
  # bench/compare_ort.py --plot, ember-bench's plot
  python3-matplotlib
  # boards over ssh: the client (ember-run --remote), and sshd as a local board in tests/remote
  # (the tests start their own sshd on 127.0.0.1; where systemd runs, Debian's package also
  # enables the ssh service on port 22: `systemctl disable --now ssh` if that is unwanted)
  openssh-client openssh-server
  # ONNX Runtime peer (onnxruntime-node from npm)
  nodejs
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Debian's nodejs comes without npm (a package of its own); a Node.js from elsewhere (NodeSource)
# carries its own npm and conflicts with Debian's, so npm is installed only when none is found.
command -v npm >/dev/null || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "bootstrap: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
