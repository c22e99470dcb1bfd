#!/usr/bin/env bash
# Build .cluster/bin/labcluster when its sources changed (or it is missing).
# Used by cluster-up.sh and by labkit when a test binary needs a cluster.
# Prints nothing when the binary is up to date.
#
#   scripts/build-labcluster.sh                      the course's release (versions.env
#                                                    KUBERNETES_VERSION): .cluster/bin/labcluster
#   scripts/build-labcluster.sh --release previous   the release before it
#                                                    (PREVIOUS_KUBERNETES_VERSION): .cluster/bin/labcluster-1.N
#
# Both are built from the same Go files in cluster/. The previous release
# takes its module graph from cluster/previous/go.mod (go build -modfile),
# and the build tag release_previous selects the few files that differ
# between the releases. (labkit passes --release previous when a test runs
# with LAB_RELEASE=previous; this script does not read LAB_RELEASE itself, so
# that scripts/test.sh, which runs .cluster/bin/labcluster, always gets it.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=release.sh
source "$root/scripts/release.sh"
release_from_args "scripts/build-labcluster.sh [--release current|previous]" "$@"
# shellcheck source=../versions.env
source "$root/versions.env"
case "$release" in
current | "")
  version=$KUBERNETES_VERSION
  bin="$root/.cluster/bin/labcluster"
  modfile=()
  tags=()
  ;;
previous)
  version=$PREVIOUS_KUBERNETES_VERSION
  release_minor=${version#v}; release_minor=${release_minor%.*}
  bin="$root/.cluster/bin/labcluster-$release_minor"
  modfile=(-modfile=previous/go.mod)
  tags=(-tags=release_previous)
  ;;
*) echo "build-labcluster: unknown release \"$release\" (current or previous)" >&2; exit 2 ;;
esac
stamp="$bin.sources"

command -v go >/dev/null || { echo "build-labcluster: Go is not installed; install Go 1.26 from https://go.dev/dl/" >&2; exit 1; }

# The binary is current when the hash of everything that goes into it matches
# the one recorded at its last build: its Go files and clusterstate's (which
# cluster/go.mod replaces with ../clusterstate), both releases' go.mod/go.sum,
# this script (the version stamp below), the Go version, and the release
# built (so that the two binaries' stamps never agree).
sources=$( { cd "$root" && find cluster clusterstate \( -name '*.go' ! -name '*_test.go' \) -o -name 'go.mod' -o -name 'go.sum' | LC_ALL=C sort | xargs sha256sum; sha256sum scripts/build-labcluster.sh versions.env; go version; echo "release $release $version ${modfile[*]} ${tags[*]}"; } | sha256sum | cut -d' ' -f1)
if [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$sources" ]]; then
  exit 0
fi

# kubectl version, /version and the components read these; without them the
# server would call itself v0.0.0-master and refuse its own compatibility version.
minor=${version#v1.}; minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=2026-07-22T00:00:00Z"
done

mkdir -p "$root/.cluster/bin"
cd "$root/cluster"
echo "build-labcluster: building $(basename "$bin") (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl at $version) from Go modules."
echo "build-labcluster: the first build downloads ~1 GB of modules and compiles ~2,700 packages: several minutes on 2 cores. Later builds take seconds."
# GOWORK=off: the binary is pinned by cluster/go.mod (or previous/go.mod) alone, whatever the labs
# require (scripts/test.sh vets it the same way, so both share the build cache).
export GOWORK=off
go mod download "${modfile[@]}"
total=$(go list "${modfile[@]}" "${tags[@]}" -deps . | wc -l)
main=$(go list "${modfile[@]}" "${tags[@]}" .)
SECONDS=0
elapsed() { printf '%dm%02ds' $((SECONDS / 60)) $((SECONDS % 60)); }
# -v names each package as it is compiled (cached ones are skipped), which is
# our progress meter. The main package comes last; the link after it prints
# nothing for a minute or two, so we say so.
if ! go build "${modfile[@]}" "${tags[@]}" -v -ldflags "$ldflags" -o "$bin.tmp" . 2>&1 | {
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
