#!/usr/bin/env bash
# The main job on a bundled example, on a fresh machine: install what is missing, build,
# then optimize one workload of the suite end to end (profile its training input, plan
# the layout, race every allocator alone against callsite and the plans on top of each,
# and recommend a plan only where its advantage over the best allocator alone is resolved).
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

echo
echo "== the evidence: $out/optimize.md (table), $out/optimize.json (every round)"
if [ -f "$out/recommended.env" ]; then
  echo "== the recommended configuration's environment (for any launcher: export these, then run the program)"
  cat "$out/recommended.env"
fi
