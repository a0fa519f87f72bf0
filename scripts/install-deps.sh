#!/usr/bin/env bash
# Installs the Debian packages loom builds and tests with, only those missing (idempotent).
# LOOM_WITH_PLOTTING=1 adds matplotlib for tools/plot_metrics.py; LOOM_WITH_FUZZ=1 clang;
# LOOM_WITH_FORMAT=1 clang-format-14 (scripts/check-format.sh).
# slurm-wlm, munge and python3-yaml are for the cluster tests (tests/cluster), which start their
# own daemons: the packages' services are not started here (see policy-rc.d below).
# Needs root or sudo. The CUDA toolkit, cuDNN and NCCL are not Debian packages here: loom
# builds its CUDA backend when it finds them (in /usr/local/cuda or the system folders).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config ccache
  libeigen3-dev libgtest-dev libgmock-dev
  libjpeg62-turbo-dev libpng-dev zlib1g-dev
  nlohmann-json3-dev libcli11-dev
  libopenmpi-dev openmpi-bin
  dataset-fashion-mnist
  slurm-wlm munge python3-yaml
)
[ "${LOOM_WITH_FUZZ:-0}" = 1 ] && packages+=(clang libclang-rt-14-dev)
[ "${LOOM_WITH_FORMAT:-0}" = 1 ] && packages+=(clang-format-14)
# tools/plot_metrics.py's charts: LOOM_WITH_PLOTTING=1 scripts/install-deps.sh
[ "${LOOM_WITH_PLOTTING:-0}" = 1 ] && packages+=(python3-matplotlib)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Without systemd, dpkg would start munged (and try slurmctld and slurmd) from their init scripts
# on installation; Debian's policy-rc.d answer 101 tells it not to, for this install only.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d > /dev/null
  $sudo chmod 755 /usr/sbin/policy-rc.d
  trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
