#!/usr/bin/env bash
# Stop whichever cluster scripts/cluster-up.sh started; leave no process behind.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# A kind cluster: the marker cluster-up.sh leaves (before kind starts), or,
# when that marker is gone (removed by hand, or a start by an older
# cluster-up.sh), a kind cluster of the course's name.
kind_up() {
  [[ -f "$root/.cluster/kind" ]] && return 0
  [[ -x "$root/.cluster/bin/kind" ]] && docker info >/dev/null 2>&1 &&
    "$root/.cluster/bin/kind" get clusters 2>/dev/null | grep -qx listwatch-labs
}
if kind_up; then
  "$root/.cluster/bin/kind" delete cluster --name listwatch-labs --kubeconfig "$root/.cluster/kubeconfig"
  rm -f "$root/.cluster/kind" "$root/.cluster/kubeconfig"
  # kind leaves the Docker network it made ("kind") for the next cluster;
  # remove it when no container is on it (another kind cluster may be).
  if [[ "$(docker network inspect kind --format '{{len .Containers}}' 2>/dev/null)" == 0 ]]; then
    docker network rm kind >/dev/null && echo "cluster-down: removed the Docker network kind made"
  fi
elif [[ -x "$root/.cluster/bin/labcluster" ]]; then
  "$root/.cluster/bin/labcluster" down --dir "$root/.cluster"
else
  echo "cluster-down: nothing to stop"
fi
