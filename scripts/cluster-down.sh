#!/usr/bin/env bash
# Stop whichever cluster scripts/cluster-up.sh started; leave no process behind.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ -f "$root/.cluster/kind" ]]; then
  "$root/.cluster/bin/kind" delete cluster --name listwatch-labs --kubeconfig "$root/.cluster/kubeconfig"
  rm -f "$root/.cluster/kind" "$root/.cluster/kubeconfig"
elif [[ -x "$root/.cluster/bin/labcluster" ]]; then
  "$root/.cluster/bin/labcluster" down --dir "$root/.cluster"
else
  echo "cluster-down: nothing to stop"
fi
