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
#   3. Ctrl-C during scripts/cluster-up.sh kind: a SIGINT to its process
#      group (what a terminal's Ctrl-C sends) once kind starts its kubeadm
#      step (its "Starting control-plane" line; the node container and the
#      network exist), and a check that no kind container, network or
#      marker is left;
#   4. scripts/cluster-up.sh kind with that image and
#      testdata/kind-config-sandbox.yaml, timed;
#   5. scripts/kubectl version;
#   6. every lab's demo (`scripts/labs run NN`), then `go test ./...` in
#      each lab, which finds the cluster through .cluster/kubeconfig as it
#      finds any cluster;
#   7. scripts/cluster-down.sh, then a check that no kind container or
#      network is left;
#   8. a summary per lab: passed or failed, and each skipped test by name
#      with the reason it gave (some of them skip on every target, not only
#      on kind).
#   scripts/kind-e2e.sh --release previous
#                                      the same on a kind cluster of the
#                                      release before the course's
#                                      (versions.env PREVIOUS_KUBERNETES_VERSION):
#                                      the node image of it built here
#                                      (scripts/kind-node-image.sh --release
#                                      previous), started by
#                                      scripts/cluster-up.sh kind --release
#                                      previous, and LAB_RELEASE=previous for
#                                      the demos and tests, so that anything
#                                      that starts a cluster of its own, and
#                                      scripts/kubectl, are of that release too
#                                      (labkit's EnvRelease)
# Its log is .cluster/kind-e2e/; the exit status is 0 only when every lab
# passed and nothing was left behind. A Ctrl-C after the start removes the
# cluster (scripts/cluster-down.sh) and exits 130; the Docker engine it
# started runs on (scripts/sandbox-docker.sh starts it in a session of its
# own).
#
#   scripts/kind-e2e.sh --skips LOG    only print the skipped tests of a
#                                      `go test -v` LOG, as the summary does
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The skipped tests of a `go test -v` log, one a line: NAME: REASON. The
# reason is a scenario's `skip 'REASON'` line that ran (the scenario ends
# there; a conditional one not taken is followed by the next command), or a
# Go test's first FILE.go:N: line, its t.Skip message. go test -v heads each
# test's lines with === RUN/CONT/NAME.
skip_reasons='
/^=== (RUN|CONT|PAUSE|NAME) / { if (pending != "") reason[cur] = pending; pending = ""; cur = $3; next }
/^[ \t]*--- SKIP: / { skipped[++n] = $3; next }
pending != "" { if ($0 !~ /^[ \t]*> /) reason[cur] = pending; pending = "" }
cur != "" && /^[ \t]*> \[[^]]*\] skip \047/ {
  line = $0; sub(/^[^\047]*\047/, "", line); sub(/\047[ \t]*$/, "", line); gsub(/\047\047/, "\047", line); pending = line; next
}
cur != "" && !(cur in reason) && /^[ \t]+[a-z_]+\.go:[0-9]+: / && !/testscript\.go:/ {
  line = $0; sub(/^[ \t]+[a-z_]+\.go:[0-9]+: /, "", line); reason[cur] = line
}
END {
  if (pending != "") reason[cur] = pending
  for (i = 1; i <= n; i++) print skipped[i] ": " (skipped[i] in reason ? reason[skipped[i]] : "(no reason printed; see the log)")
}'
if [[ ${1:-} == --skips ]]; then
  awk "$skip_reasons" "${2:?usage: scripts/kind-e2e.sh --skips LOG}"
  exit
fi
# shellcheck source=release.sh
source "$root/scripts/release.sh"
release_from_args "scripts/kind-e2e.sh [--release current|previous] | --skips LOG" "$@"
# shellcheck source=../versions.env
source "$root/versions.env"
case "$release" in
current) version=$KUBERNETES_VERSION ;;
previous) version=$PREVIOUS_KUBERNETES_VERSION ;;
*) echo "kind-e2e: unknown release \"$release\" (current or previous)" >&2; exit 2 ;;
esac
export LAB_RELEASE=$release
logs="$root/.cluster/kind-e2e"
rm -rf "$logs"
mkdir -p "$logs"
start=$(date +%s)
say() { echo "kind-e2e: [$(( $(date +%s) - start ))s] $*"; }

if ! docker info >/dev/null 2>&1; then
  say "no Docker engine answers; starting one (scripts/sandbox-docker.sh)"
  "$root/scripts/sandbox-docker.sh" || exit 1
fi
"$root/scripts/kind-node-image.sh" --release "$release" || { say "the node image did not build"; exit 1; }

if [[ -f "$root/.cluster/kind" || -f "$root/.cluster/state.json" ]]; then
  say "a cluster is up here already; stop it first with scripts/cluster-down.sh"
  exit 1
fi
export KIND_NODE_IMAGE="listwatch-labs/kind-node:$version" KIND_CONFIG="$root/testdata/kind-config-sandbox.yaml"
# What a failed run must not leave: kind's node containers and network, and
# the marker cluster-up.sh writes.
leftovers() {
  local left net
  left=$(docker ps -a --filter label=io.x-k8s.kind.cluster --format '{{.Names}}')
  net=$(docker network ls --filter name='^kind$' --format '{{.Name}}')
  [[ -z "$left$net" && ! -f "$root/.cluster/kind" ]] && return 0
  say "left behind $1: containers [$left], networks [$net], marker .cluster/kind $( [[ -f "$root/.cluster/kind" ]] && echo present || echo absent)"
  return 1
}
down() {
  "$root/scripts/cluster-down.sh" >"$logs/cluster-down.log" 2>&1
  leftovers "after cluster-down.sh" || return 1
  say "cluster-down.sh left no kind container and no kind network"
}

# Ctrl-C in the middle of a start. set -m gives the start its own process
# group, as a terminal's foreground job has; kill -INT to the group is what
# Ctrl-C sends. Waited for: kind's line for its kubeadm step, so the node
# container and the network exist.
say "Ctrl-C during cluster-up.sh kind, once kind starts its kubeadm step"
set -m
"$root/scripts/cluster-up.sh" kind --release "$release" >"$logs/interrupted-up.log" 2>&1 &
up_pid=$!
set +m
deadline=$((SECONDS + 180))
until grep -q 'Starting control-plane' "$logs/interrupted-up.log" || ((SECONDS > deadline)) || ! kill -0 "$up_pid" 2>/dev/null; do
  sleep 0.2
done
if ! grep -q 'Starting control-plane' "$logs/interrupted-up.log"; then
  say "cluster-up.sh never reached kubeadm (log: .cluster/kind-e2e/interrupted-up.log)"
  kill -INT -- -"$up_pid" 2>/dev/null; wait "$up_pid"; down
  exit 1
fi
kill -INT -- -"$up_pid"
wait "$up_pid"
int_status=$?
if [[ $int_status != 130 ]] || ! grep -q 'cluster-up: interrupted; removing the half-made kind cluster' "$logs/interrupted-up.log" || ! leftovers "after Ctrl-C"; then
  say "Ctrl-C: exit $int_status, not 130 with everything removed (log: .cluster/kind-e2e/interrupted-up.log)"
  down
  exit 1
fi
say "Ctrl-C: cluster-up.sh said so, exited 130 and left no kind container, network or marker"

# From here a cluster is up or starting: Ctrl-C removes it. (cluster-up.sh,
# in this foreground process group, gets the same SIGINT and removes a
# half-made one itself; cluster-down.sh then finds nothing to stop.)
trap 'trap "" INT TERM; echo; say "interrupted; stopping the kind cluster"; down; exit 130' INT TERM
up_start=$(date +%s)
"$root/scripts/cluster-up.sh" kind --release "$release" 2>&1 | tee "$logs/cluster-up.log"
up_status=${PIPESTATUS[0]}
say "cluster-up.sh kind: exit $up_status in $(( $(date +%s) - up_start ))s"
if [[ $up_status != 0 ]]; then
  down
  exit 1
fi
"$root/scripts/kubectl" version 2>&1 | tee "$logs/kubectl-version.log"
server=$(sed -n 's/^Server Version: //p' "$logs/kubectl-version.log")
if [[ $server != "$version" ]]; then
  say "the kind cluster says Server Version ${server:-(none)}, not $version"
  down
  exit 1
fi
# Every result below must come from this kind cluster: a lab's test binary
# that finds no cluster answering starts a private labcluster and passes
# there. So kind's node is asked for before the demos and after the labs.
kind_answers() { "$root/scripts/kubectl" get node listwatch-labs-control-plane >/dev/null 2>&1; }
if ! kind_answers; then
  say "the kind cluster does not answer after its start (scripts/kubectl get node listwatch-labs-control-plane failed)"
  down
  exit 1
fi

declare -A result
failed=0
# The narrated demos (`scripts/labs run NN`), as a learner runs them, on
# kind: lab 01's LISTs with curl, which on kind needs the kubeconfig's
# client certificate instead of a token. (Lab 04 has no demo.)
for lab in "$root"/labs/*/; do
  name=$(basename "$lab")
  grep -q '"demo"' "$lab/exercises.json" 2>/dev/null || continue
  say "scripts/labs run ${name%%-*}"
  if (cd "$root" && scripts/labs run "${name%%-*}" >"$logs/demo-$name.log" 2>&1); then
    result["$name/demo"]="passed"
  else
    result["$name/demo"]="FAILED (log: .cluster/kind-e2e/demo-$name.log)"
    failed=1
  fi
done

for lab in "$root"/labs/*/; do
  name=$(basename "$lab")
  say "go test ./... in labs/$name"
  (cd "$lab" && go test -count=1 -v ./... >"$logs/$name.log" 2>&1)
  status=$?
  skips=$(grep -cE '^\s*--- SKIP' "$logs/$name.log")
  reasons=$(awk "$skip_reasons" "$logs/$name.log" | sort)
  if [[ $status == 0 ]]; then
    result[$name]="passed"
  else
    result[$name]="FAILED (log: .cluster/kind-e2e/$name.log)"
    failed=1
  fi
  if [[ $skips != 0 ]]; then
    result[$name]+=", $skips skipped:"$'\n'"$(sed 's/^ */      /' <<<"$reasons")"
  fi
done
if ! kind_answers; then
  say "the kind cluster stopped answering while the labs ran: their results may come from private labclusters"
  failed=1
fi
down || failed=1

echo
echo "kind-e2e: on kind $KIND_VERSION, node image listwatch-labs/kind-node:$version (Server Version $server):"
for name in $(printf '%s\n' "${!result[@]}" | sort); do
  echo "  $name: ${result[$name]}"
done
say "done"
exit $failed
