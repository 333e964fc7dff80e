#!/usr/bin/env bash
# The main job on a bundled example, on a fresh machine: install what is missing, build,
# then optimize one workload of the suite end to end (profile its training input, plan
# the layout, measure the planned layout against the allocator alone), and finish with the
# honest comparison against every general-purpose allocator.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

workload=${1:-halo_tokens}
read -r train ref < <(python3 -c "
from heaplayout.workloads import load_suite
w = {w.name: w for w in load_suite()}['$workload']
print(','.join(w.args('small')), ','.join(w.args('ref')))")
exe=build/workloads/fp/$workload
out=build/demo/$workload
mkdir -p "$out"

heaplayout optimize --runs 5 -o "$out" --train "${train//,/ }" -- "$exe" ${ref//,/ }

plan=$out/$workload.halo.plan
echo
echo "== against every general-purpose allocator (ours stacks on top of any of them)"
heaplayout bench --runs 3 --json "$out/allocators.json" \
  --config glibc,jemalloc,mimalloc,tcmalloc,off,callsite,plan="$plan",plan_mi=plan+mimalloc="$plan" \
  -- "$exe" ${ref//,/ }
