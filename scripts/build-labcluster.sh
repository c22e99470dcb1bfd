#!/usr/bin/env bash
# Build .cluster/bin/labcluster when its sources changed (or it is missing).
# Used by cluster-up.sh and by labkit when a test binary needs a cluster.
# Prints nothing when the binary is up to date.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/.cluster/bin/labcluster"
stamp="$bin.sources"

command -v go >/dev/null || { echo "build-labcluster: Go is not installed; install Go 1.26 from https://go.dev/dl/" >&2; exit 1; }

# The binary is current when the hash of everything that goes into it matches
# the one recorded at its last build: its Go files and clusterstate's (which
# cluster/go.mod replaces with ../clusterstate), go.mod/go.sum, this script
# (the version stamp below) and the Go version.
sources=$( { cd "$root" && find cluster clusterstate \( -name '*.go' ! -name '*_test.go' \) -o -name 'go.mod' -o -name 'go.sum' | LC_ALL=C sort | xargs sha256sum; sha256sum scripts/build-labcluster.sh versions.env; go version; } | sha256sum | cut -d' ' -f1)
if [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$sources" ]]; then
  exit 0
fi

# kubectl version, /version and the components read these; without them the
# server would call itself v0.0.0-master and refuse its own compatibility version.
# shellcheck source=../versions.env
source "$root/versions.env"
version=$KUBERNETES_VERSION
minor=${version#v1.}; minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=2026-07-22T00:00:00Z"
done

mkdir -p "$root/.cluster/bin"
cd "$root/cluster"
echo "build-labcluster: building labcluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl at $version) from Go modules."
echo "build-labcluster: the first build downloads ~1 GB of modules and compiles ~2,700 packages: several minutes on 2 cores. Later builds take seconds."
# GOWORK=off: the binary is pinned by cluster/go.mod alone, whatever the labs
# require (scripts/test.sh vets it the same way, so both share the build cache).
export GOWORK=off
go mod download
total=$(go list -deps . | wc -l)
main=$(go list .)
SECONDS=0
elapsed() { printf '%dm%02ds' $((SECONDS / 60)) $((SECONDS % 60)); }
# -v names each package as it is compiled (cached ones are skipped), which is
# our progress meter. The main package comes last; the link after it prints
# nothing for a minute or two, so we say so.
if ! go build -v -ldflags "$ldflags" -o "$bin.tmp" . 2>&1 | {
  n=0
  while IFS= read -r line; do
    case "$line" in
      "$main") echo "build-labcluster: compiled $((n + 1)) packages, $(elapsed); linking the binary (a minute or two with no output)" ;;
      *" "*|*:*|"#"*) echo "$line" >&2 ;; # not a package path: a compiler message
      *) n=$((n + 1))
         if (( n % 200 == 0 )); then echo "build-labcluster: compiled $n packages (of at most $total), $(elapsed)"; fi ;;
    esac
  done
}; then
  echo "build-labcluster: build failed (errors above)" >&2
  exit 1
fi
mv "$bin.tmp" "$bin"
echo "$sources" > "$stamp"
echo "build-labcluster: built $bin in $(elapsed)"
