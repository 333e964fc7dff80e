#!/usr/bin/env bash
# Configure and build all C/C++ parts into build/ (runtime, workloads, profiler, test programs).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
