#!/usr/bin/env bash
# Every lab against the previous Kubernetes release (issue #30): the
# release before the course's, versions.env PREVIOUS_KUBERNETES_VERSION.
#
#   scripts/previous-release.sh
#
# It builds that release's control plane, .cluster/bin/labcluster-1.N
# (scripts/build-labcluster.sh --release previous: the same Go files as
# labcluster, pinned by cluster/previous/go.mod; the first build compiles
# all of Kubernetes again: 7½ minutes on 2 cores with the modules
# downloaded), starts it in a temporary directory (a cluster of this checkout's .cluster is left alone)
# and runs against it, each step timed:
#   - every lab's tests and scenarios (go test ./... in labs/NN-*), with
#     LAB_RELEASE=previous, so that a test binary that starts a cluster of
#     its own starts this release too (labkit's EnvRelease);
#   - the API chunking conformance test the course ports (lab 04's
#     TestChunking*, from k8s.io/kubernetes' test/e2e/apimachinery/chunking.go);
#   - the robustness short mode on the real stack (robustness/, -stacks real:
#     the real kube-apiserver on a three-member etcd, both of this release);
#   - the live view's real-cluster side (learn/view TestRealClusterBesideIt:
#     the kube-apiserver's LIST counters, named differently on 1.36);
#   - lab 01's README as the README check runs it (its curl blocks, and the
#     rest of it), on a cluster of this release.
# It prints one line per step (PASS or FAIL, and its time) and the total,
# with the failing tests of each failed step, and exits 1 if any failed.
# Each step's whole output is kept in .cluster/previous-release/.
#
# It is not part of scripts/test.sh: it builds a second control plane
# (minutes, the first time) and takes 3½ to 4½ minutes more once that is built
# (docs/cluster.md gives the measured times).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
# shellcheck source=../versions.env
source versions.env
previous_minor=${PREVIOUS_KUBERNETES_VERSION#v}
previous_minor=${previous_minor%.*}
bin=$root/.cluster/bin/labcluster-$previous_minor

# The clusters these tests start are of the previous release; a cluster the
# caller has up (KUBECONFIG, .cluster) is not used.
export LAB_RELEASE=previous
unset KUBECONFIG LABCLUSTER_DIR LABKIT_PRIVATE_CLUSTER

logs=$root/.cluster/previous-release
rm -rf "$logs"
mkdir -p "$logs"
SECONDS=0
say() { echo "previous-release: $*"; }

say "building labcluster-$previous_minor (Kubernetes $PREVIOUS_KUBERNETES_VERSION, etcd $PREVIOUS_ETCD_VERSION)"
"$root/scripts/build-labcluster.sh" --release previous || { say "the build failed"; exit 1; }
built=$SECONDS

# One cluster of the previous release for the steps that use a running one,
# as scripts/test.sh starts one: in a directory of its own, stopped at the end.
dir=$(mktemp -d "${TMPDIR:-/tmp}/labcluster-previous.XXXXXX")
stop() {
  "$bin" down --dir "$dir" >/dev/null 2>&1
  rm -rf "$dir"
}
trap 'stop' EXIT
trap 'say "interrupted; stopping its cluster"; exit 130' INT TERM
"$bin" up --dir "$dir" || { say "the cluster of $PREVIOUS_KUBERNETES_VERSION did not start"; exit 1; }
export KUBECONFIG=$dir/kubeconfig
server=$("$bin" kubectl version 2>/dev/null | sed -n 's/^Server Version: //p')
if [[ $server != "$PREVIOUS_KUBERNETES_VERSION" ]]; then
  say "the cluster says Server Version ${server:-(none)}, not $PREVIOUS_KUBERNETES_VERSION"
  exit 1
fi
say "Server Version: $server (labcluster in $dir)"

# step NAME DIR COMMAND...: run COMMAND in DIR, its output to $logs/NAME.log
# (and the terminal, for progress), and record PASS or FAIL with its time.
names=() results=() times=() failures=()
step() {
  local name=$1 wd=$2 t=$SECONDS rc
  shift 2
  say "$name: $*"
  (cd "$root/$wd" && "$@") 2>&1 | tee "$logs/$name.log"
  rc=${PIPESTATUS[0]}
  names+=("$name")
  times+=($((SECONDS - t)))
  if ((rc == 0)); then
    results+=(PASS)
  else
    results+=(FAIL)
    failures+=("$name")
  fi
}

for lab in labs/[0-9][0-9]-*/; do
  lab=${lab%/}
  skip=()
  # Lab 04's chunking conformance test is its own step, below.
  [[ $lab == labs/04-cacher ]] && skip=(-skip '^TestChunking')
  step "$(basename "$lab")" "$lab" go test -count=1 "${skip[@]}" ./...
done
step chunking-conformance labs/04-cacher go test -count=1 -v -run '^TestChunking' .
step view-real learn go test -count=1 -v -run '^TestRealClusterBesideIt$' ./view
step robustness-real robustness go test -count=1 -v -run '^TestRobustness$' . -args -stacks real
# The README check starts the README's cluster itself (scripts/cluster-up.sh
# in a copy of the checkout, which LAB_RELEASE=previous makes this release's).
step readme-01 labkit go test -count=1 -v -run '^TestREADMECommands$' . -args -readmes -readme '^labs/01-watch-curl/README\.md$'

echo
echo "previous-release: every lab against Kubernetes $PREVIOUS_KUBERNETES_VERSION (logs in ${logs#"$root"/}/)"
printf '  %-22s %-5s %6s\n' "step" "" "time"
printf '  %-22s %-5s %5ds\n' "build labcluster-$previous_minor" PASS "$built"
for i in "${!names[@]}"; do
  printf '  %-22s %-5s %5ds\n' "${names[i]}" "${results[i]}" "${times[i]}"
done
printf '  %-22s %-5s %5ds\n' total "" "$SECONDS"
if ((${#failures[@]} > 0)); then
  echo
  for name in "${failures[@]}"; do
    echo "previous-release: $name failed; its failing tests ($logs/$name.log):"
    grep -E '^\s*--- FAIL|^FAIL|^panic:' "$logs/$name.log" | sed 's/^/    /' | head -40
  done
  exit 1
fi
