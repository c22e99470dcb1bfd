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
# cluster/ is built with GOWORK=off, as scripts/build-labcluster.sh builds it.
# Its first run per architecture compiles k8s.io/kubernetes and etcd for darwin:
# about 10 CPU-minutes each (12 to 24 minutes on a busy 2-core machine). After
# that the build cache answers in seconds.
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
  for arch in $archs; do
    (
      cd "$m" || exit 1
      [[ $m == cluster ]] && export GOWORK=off
      export GOOS=darwin GOARCH=$arch
      go vet ./...
    ) >>"$log" 2>&1 || ok=0
  done
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
