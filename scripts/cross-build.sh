#!/usr/bin/env bash
# Compile-check and vet every module for macOS, where most learners work:
# darwin/arm64 (Apple silicon) and darwin/amd64 (Intel). Nothing is run or
# linked: go vet type-checks every package, test files included, against its
# dependencies compiled for darwin, so code that only builds on Linux outside
# a _linux.go file fails here (an undefined name is a vet error). go build
# would add the compiler's own pass over each vetted package (vet type-checks
# them; only their dependencies are compiled) and linking: for this code that
# catches almost nothing more (a function declared without a body, a bad
# //go:linkname), at the cost of a minute writing 170 MB binaries. One line
# per module; exit status 1 if any module fails, with its errors shown.
#
# cluster/ (built with GOWORK=off, as scripts/build-labcluster.sh builds it) is
# not vetted for darwin but type-checked by cluster/internal/portcheck: go vet
# for darwin would compile all of k8s.io/kubernetes and etcd for darwin first
# (about 2,700 packages, 20+ CPU-minutes per architecture with a cold cache,
# 20 minutes of a 2-core CI's budget). portcheck type-checks cluster/'s own
# packages, test files included, with the files darwin selects, against the
# standard library compiled for darwin (the 191 packages it needs: about 30
# CPU-seconds per architecture with a cold cache, cached after) and host
# export data for every other package, which the labcluster build has already
# compiled (only kind, which kindpath's tests import, may be compiled here).
# With a warm cache cluster/'s line takes 5 to 7 seconds. Our OS-specific
# surface is the standard library (syscall, os/signal, /proc); the exported
# APIs of the Kubernetes packages we call do not depend on GOOS. It does not
# find a Kubernetes package that fails to build on darwin, and runs none of
# vet's analyzers (cluster/ is vetted on linux by scripts/test.sh).
# cluster/internal/portcheck/main.go says more.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v go >/dev/null || { echo "cross-build: Go is not installed; install Go 1.26 from https://go.dev/dl/" >&2; exit 1; }

# Every module of go.work, and cluster/, which is not in it.
modules="$(sed -n 's#^[[:space:]]*\./\([^[:space:]]*\).*#\1#p' go.work) cluster"
archs="arm64 amd64"
failed=0
for m in $modules; do
  start=$SECONDS
  log=$(mktemp)
  ok=1
  if [[ $m == cluster ]]; then
    (
      cd "$m" || exit 1
      export GOWORK=off
      go run ./internal/portcheck -os darwin -arch "${archs// /,}" ./...
    ) >>"$log" 2>&1 || ok=0
  else
    for arch in $archs; do
      (
        cd "$m" || exit 1
        export GOOS=darwin GOARCH=$arch
        go vet ./...
      ) >>"$log" 2>&1 || ok=0
    done
  fi
  if [[ $ok == 1 ]]; then
    printf 'ok    %-24s darwin/arm64 darwin/amd64 (%ds)\n' "$m" $((SECONDS - start))
  else
    printf 'FAIL  %-24s darwin/arm64 darwin/amd64 (%ds)\n' "$m" $((SECONDS - start))
    sed 's/^/      /' "$log"
    failed=$((failed + 1))
  fi
  rm -f "$log"
done
[[ $failed == 0 ]]
