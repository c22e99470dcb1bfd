#!/usr/bin/env bash
# Stop whichever cluster scripts/cluster-up.sh started; leave no process behind.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Either release's labcluster (scripts/cluster-up.sh --release previous
# builds labcluster-1.N) stops either's cluster: down reads state.json and
# asks the supervisor, whatever binary it runs.
labcluster=""
for b in "$root"/.cluster/bin/labcluster "$root"/.cluster/bin/labcluster-[0-9]*; do
  [[ -x $b && $b != *.sources && $b != *.tmp ]] && { labcluster=$b; break; }
done
# A kind cluster only when this checkout started it: the marker cluster-up.sh
# writes before kind starts. Never by name alone: kind's cluster names are
# one namespace for every checkout on the machine (one Docker engine), and
# a listwatch-labs cluster without our marker may be another checkout's.
if [[ -f "$root/.cluster/kind" ]]; then
  "$root/.cluster/bin/kind" delete cluster --name listwatch-labs --kubeconfig "$root/.cluster/kubeconfig"
  rm -f "$root/.cluster/kind" "$root/.cluster/kubeconfig"
  echo "cluster-down: its objects are gone; the next scripts/cluster-up.sh kind starts an empty cluster on a new port (restart programs that watched this one)"
  # kind leaves the Docker network it made ("kind") for the next cluster;
  # remove it when no container is on it (another kind cluster may be).
  if [[ "$(docker network inspect kind --format '{{len .Containers}}' 2>/dev/null)" == 0 ]]; then
    docker network rm kind >/dev/null && echo "cluster-down: removed the Docker network kind made"
  fi
elif [[ -n $labcluster ]]; then
  out=$("$labcluster" down --dir "$root/.cluster")
  echo "$out"
  # What a learner would otherwise find out by surprise: labcluster keeps
  # nothing from one run to the next (cluster/supervisor.go, newSupervisor:
  # each start removes the old etcd data and credentials and picks free
  # ports).
  if [[ $out == "labcluster: stopped"* ]]; then
    echo "cluster-down: its objects are gone; the next scripts/cluster-up.sh starts an empty cluster on a new port (restart programs that watched this one)"
  fi
else
  echo "cluster-down: nothing to stop"
fi
