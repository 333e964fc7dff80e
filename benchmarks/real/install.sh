#!/usr/bin/env bash
# Install the corpus programs (the Debian packages named in corpus.toml). Idempotent: a
# package already installed is not touched; with everything present nothing runs.
# usage: benchmarks/real/install.sh [--check]   (--check: only list what is missing, exit 1 if any)
set -euo pipefail
cd "$(dirname "$0")/../.."
mapfile -t pkgs < <(python3 -c 'import tomllib
for p in tomllib.load(open("benchmarks/real/corpus.toml", "rb"))["program"]:
    print("\n".join(p["packages"]))' | sort -u)
missing=()
for pkg in "${pkgs[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "[real] all ${#pkgs[@]} corpus packages are installed"
  exit 0
fi
if [ "${1:-}" = "--check" ]; then
  echo "[real] missing: ${missing[*]}"
  exit 1
fi
echo "[real] installing: ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "[real] installed"
