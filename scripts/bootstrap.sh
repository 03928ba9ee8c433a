#!/usr/bin/env bash
# Installs the Debian 12 packages Loom needs (only those missing), then configures and builds.
# Usage: scripts/bootstrap.sh [build-dir]   (default: build)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build}"

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  llvm-19-dev liblld-19-dev zlib1g-dev libzstd-dev libedit-dev libxml2-dev libffi-dev
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libdlpack-dev
  libopenblas-dev libdnnl-dev verilator yosys z3 libboost-dev libssl-dev libxrt-dev libsystemc-dev
  libonnx-dev libprotobuf-dev protobuf-compiler libcli11-dev clang clang-format libclang-rt-14-dev libxgboost-dev
  gnuplot-nox slurm-wlm munge libyaml-cpp-dev valgrind
  python3-torch python3-torchvision python3-onnx python3-numpy python3-dev pybind11-dev python3-pytest
  python3-matplotlib chromium
  crossbuild-essential-arm64 crossbuild-essential-armhf qemu-user device-tree-compiler
  libssl-dev:arm64 libssl-dev:armhf
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  # The Arm boards' libcrypto (the cross-built runtime's RPC handshake) is a multiarch package.
  for arch in arm64 armhf; do
    dpkg --print-foreign-architectures | grep -qx $arch || "${sudo_cmd[@]}" dpkg --add-architecture $arch
  done
  # A mirror mid-sync fails one index (exit 100) while the rest are current: install from what it has.
  "${sudo_cmd[@]}" apt-get update -qq ||
    echo "bootstrap: apt-get update reported errors; installing from the package indexes it could read"
  apt_install() { DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "$@"; }
  if ! apt_install "${missing[@]}"; then
    # libssl for amd64, arm64 and armhf must share one version (Multi-Arch: same); a mirror whose
    # security index lags for one architecture offers none in common at the newest. Install the
    # rest, then OpenSSL at the newest version every architecture has.
    rest=()
    for p in "${missing[@]}"; do [[ $p == libssl-dev* ]] || rest+=("$p"); done
    ((${#rest[@]} == 0)) || apt_install "${rest[@]}"
    common=$(comm -12 <(apt-cache madison libssl-dev:arm64 | awk '{print $3}' | sort) \
      <(apt-cache madison libssl-dev:armhf | awk '{print $3}' | sort) |
      comm -12 - <(apt-cache madison libssl-dev | awk '{print $3}' | sort) | sort -V | tail -1)
    [ -n "$common" ] || { echo "bootstrap: no libssl-dev version common to amd64, arm64 and armhf"; exit 1; }
    ssl=()
    for a in "" ":arm64" ":armhf"; do ssl+=("libssl-dev$a=$common" "libssl3$a=$common"); done
    apt_install --allow-downgrades "${ssl[@]}"
  fi
fi

cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j"$(nproc)"

# ONNX Runtime's CPU build, the baseline of bench/zoo_bench (optional): the npm package's install
# script tries a download that fails offline, and the CPU library is in the package itself.
if [ ! -d "$build/ort/node_modules/onnxruntime-node" ]; then
  if command -v npm > /dev/null; then
    timeout 300 npm install --silent --ignore-scripts --prefix "$build/ort" onnxruntime-node@1.20.1 > /dev/null 2>&1 ||
      echo "bootstrap: onnxruntime-node not installed (npm failed); zoo_bench will run without its baseline"
  else
    echo "bootstrap: npm not found; zoo_bench will run without ONNX Runtime (install nodejs and npm for it)"
  fi
fi

# Chart.js, inlined into `loom regress --coverage`'s dashboard (coverage.html); without it the
# dashboard has its tables and heat map but no charts.
if [ ! -f "$build/js/node_modules/chart.js/dist/chart.umd.js" ] && command -v npm > /dev/null; then
  timeout 300 npm install --silent --ignore-scripts --prefix "$build/js" chart.js@4.5.1 > /dev/null 2>&1 ||
    echo "bootstrap: chart.js not installed (npm failed); coverage dashboards will have no charts"
fi
