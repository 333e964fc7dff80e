#!/usr/bin/env bash
# The main job on a bundled example, on a fresh machine: install what is missing, build,
# then run one workload of the suite under glibc, our runtime with policy off (overhead
# only) and with policy callsite (per-call-site pools), printing the comparison table.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

workload=${1:-health}
args=$(python3 -c "
from heaplayout.workloads import load_suite
w = {w.name: w for w in load_suite()}['$workload']
print(' '.join(w.args('small')))")
exe=build/workloads/fp/$workload
echo
echo "== heaplayout bench on workloads/$workload ($exe $args)"
heaplayout bench --runs 5 --config glibc,off,callsite --json build/demo-bench.json -- "$exe" $args
echo
echo "== where callsite put the objects (per-pool statistics)"
heaplayout run --policy callsite --stats -- "$exe" $args >/dev/null
