#!/usr/bin/env bash
# Stop whichever cluster scripts/cluster-up.sh started; leave no process behind.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# A kind cluster only when this checkout started it: the marker cluster-up.sh
# writes before kind starts. Never by name alone: kind's cluster names are
# one namespace for every checkout on the machine (one Docker engine), and
# a listwatch-labs cluster without our marker may be another checkout's.
if [[ -f "$root/.cluster/kind" ]]; then
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
