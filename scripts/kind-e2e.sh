#!/usr/bin/env bash
# scripts/kind-e2e.sh: every lab's tests on a real kind cluster, with the
# node image built here (scripts/kind-node-image.sh). Not part of
# scripts/test.sh: its first run builds Kubernetes, etcd, CoreDNS and
# containerd and takes long. Run it before changing anything the kind path
# touches.
#
#   1. a Docker engine: the one that answers, else scripts/sandbox-docker.sh
#      starts one (on the course's sandbox; see that script);
#   2. the node image, built or reused;
#   3. scripts/cluster-up.sh kind with that image and
#      testdata/kind-config-sandbox.yaml, timed;
#   4. scripts/kubectl version;
#   5. `go test ./...` in each lab, which finds the cluster through
#      .cluster/kubeconfig as it finds any cluster;
#   6. scripts/cluster-down.sh, then a check that no kind container or
#      network is left;
#   7. a summary per lab: passed, skipped (with the reason), failed.
# Its log is .cluster/kind-e2e/; the exit status is 0 only when every lab
# passed and nothing was left behind.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=../versions.env
source "$root/versions.env"
logs="$root/.cluster/kind-e2e"
rm -rf "$logs"
mkdir -p "$logs"
start=$(date +%s)
say() { echo "kind-e2e: [$(( $(date +%s) - start ))s] $*"; }

if ! docker info >/dev/null 2>&1; then
  say "no Docker engine answers; starting one (scripts/sandbox-docker.sh)"
  "$root/scripts/sandbox-docker.sh" || exit 1
fi
"$root/scripts/kind-node-image.sh" || { say "the node image did not build"; exit 1; }

if [[ -f "$root/.cluster/kind" || -f "$root/.cluster/state.json" ]]; then
  say "a cluster is up here already; stop it first with scripts/cluster-down.sh"
  exit 1
fi
up_start=$(date +%s)
KIND_NODE_IMAGE="listwatch-labs/kind-node:$KUBERNETES_VERSION" KIND_CONFIG="$root/testdata/kind-config-sandbox.yaml" \
  "$root/scripts/cluster-up.sh" kind 2>&1 | tee "$logs/cluster-up.log"
up_status=${PIPESTATUS[0]}
say "cluster-up.sh kind: exit $up_status in $(( $(date +%s) - up_start ))s"
down() {
  "$root/scripts/cluster-down.sh" >"$logs/cluster-down.log" 2>&1
  left=$(docker ps -a --filter label=io.x-k8s.kind.cluster --format '{{.Names}}')
  net=$(docker network ls --filter name='^kind$' --format '{{.Name}}')
  if [[ -n "$left" || -n "$net" ]]; then
    say "left behind after cluster-down.sh: containers [$left], networks [$net]"
    return 1
  fi
  say "cluster-down.sh left no kind container and no kind network"
}
if [[ $up_status != 0 ]]; then
  down
  exit 1
fi
"$root/scripts/kubectl" version 2>&1 | tee "$logs/kubectl-version.log"

declare -A result
failed=0
for lab in "$root"/labs/*/; do
  name=$(basename "$lab")
  say "go test ./... in labs/$name"
  (cd "$lab" && go test -count=1 -v ./... >"$logs/$name.log" 2>&1)
  status=$?
  # The skipped tests, and the reasons they gave: a scenario's `skip 'REASON'`
  # line, or a Go test's t.Skip message under its --- SKIP line.
  skips=$(grep -cE '^\s*--- SKIP' "$logs/$name.log")
  reasons=$( { grep -oE "\] skip '.*'" "$logs/$name.log" | sed "s/^\] skip '//; s/'\$//; s/''/'/g"
               grep -B1 -A1 -E '^\s*--- SKIP' "$logs/$name.log" | grep -E '^\s+[a-z_]+\.go:[0-9]+: ' | sed -E 's/^\s+[a-z_]+\.go:[0-9]+: //'; } | sort -u)
  if [[ $status == 0 ]]; then
    result[$name]="passed"
  else
    result[$name]="FAILED (log: .cluster/kind-e2e/$name.log)"
    failed=1
  fi
  if [[ $skips != 0 ]]; then
    result[$name]+=", $skips skipped, because:"$'\n'"$(sed 's/^ */      /' <<<"$reasons")"
  fi
done
down || failed=1

echo
echo "kind-e2e: on kind $KIND_VERSION, node image listwatch-labs/kind-node:$KUBERNETES_VERSION:"
for name in $(printf '%s\n' "${!result[@]}" | sort); do
  echo "  $name: ${result[$name]}"
done
say "done"
exit $failed
