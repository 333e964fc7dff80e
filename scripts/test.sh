#!/usr/bin/env bash
# The whole test suite on a fresh machine: install what is missing, build, run pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
python3 -m pytest -q tests "$@"
