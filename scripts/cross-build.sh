#!/usr/bin/env bash
# Type-check every module for macOS, where most learners work: darwin/arm64
# (Apple silicon) and darwin/amd64 (Intel). Nothing is run or linked.
#
#   scripts/cross-build.sh          every module, with cluster/internal/portcheck
#   scripts/cross-build.sh --vet    also GOOS=darwin go vet in every module of
#                                   go.work (vet's analyzers on the darwin build;
#                                   10-20 minutes with an empty build cache)
#
# portcheck (cluster/internal/portcheck/main.go says how) type-checks a
# module's own packages, test files included, with the files darwin selects
# (build tags and _GOOS.go suffixes applied, as vet would), against the
# standard library compiled for darwin (191 packages, about 30 CPU-seconds
# per architecture with a cold cache, cached after) and export data of every
# other package compiled for the host, which the tests have compiled already.
# So code that only builds on Linux outside a _linux.go file fails here (an
# undefined name, a syscall field darwin lacks), at the cost of seconds.
# `GOOS=darwin go vet` would compile every dependency (client-go, apiserver,
# etcd, Kubernetes for cluster/) for darwin first, twice: 20 minutes and more
# of a new machine's test run on two cores, for the same type errors; its
# analyzers run on the linux build in scripts/test.sh. What portcheck does
# not catch: a dependency that does not build for darwin, an exported API
# that differs by GOOS, vet's analyzers on darwin-only files (--vet runs
# them), and what only the compiler or linker sees.
#
# One line per module; exit status 1 if any module fails, with its errors.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v go >/dev/null || { echo "cross-build: Go is not installed; install Go 1.26 from https://go.dev/dl/" >&2; exit 1; }
vet=0
case ${1:-} in
"") ;;
--vet) vet=1 ;;
*) echo "cross-build: unknown argument $1 (scripts/cross-build.sh [--vet])" >&2; exit 2 ;;
esac

# Every module of go.work, and cluster/, which is not in it.
modules="$(sed -n 's#^[[:space:]]*\./\([^[:space:]]*\).*#\1#p' go.work) cluster"
archs="arm64 amd64"
bin=$(mktemp -d "${TMPDIR:-/tmp}/cross-build.XXXXXX")
trap 'rm -rf "$bin"' EXIT
# portcheck is built once, from cluster/ (pinned by its own go.mod), and run
# in each module: its go list calls then see that module as go does there
# (the workspace, or GOWORK=off for cluster/).
(cd cluster && GOWORK=off go build -o "$bin/portcheck" ./internal/portcheck) || { echo "cross-build: building cluster/internal/portcheck failed"; exit 1; }
failed=0
for m in $modules; do
  start=$SECONDS
  log=$(mktemp "$bin/log.XXXXXX")
  ok=1
  what="type-checked"
  (
    cd "$m" || exit 1
    [[ $m == cluster ]] && export GOWORK=off
    "$bin/portcheck" -os darwin -arch "${archs// /,}" ./...
  ) >>"$log" 2>&1 || ok=0
  if [[ $vet == 1 && $m != cluster ]]; then
    what="type-checked and vetted"
    for arch in $archs; do
      (cd "$m" && GOOS=darwin GOARCH=$arch go vet ./...) >>"$log" 2>&1 || ok=0
    done
  fi
  if [[ $ok == 1 ]]; then
    printf 'ok    %-24s darwin/arm64 darwin/amd64 %s (%ds)\n' "$m" "$what" $((SECONDS - start))
  else
    printf 'FAIL  %-24s darwin/arm64 darwin/amd64 (%ds)\n' "$m" $((SECONDS - start))
    grep -v '^ok ' "$log" | sed 's/^/      /'
    failed=$((failed + 1))
  fi
done
[[ $failed == 0 ]]
