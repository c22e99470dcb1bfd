#!/usr/bin/env bash
# THE test command: go vet and go test in every module of go.work (and
# cluster/, built on its own), against one cluster. It uses the cluster already
# up ($KUBECONFIG, else .cluster/kubeconfig); with none, it starts an embedded
# one for the run and stops it at the end.
#
# What it runs, in order: the version and link checks (scripts/check-versions.sh,
# scripts/check-links.sh); per module go vet, go test -race (RACE=0 leaves
# the race detector out, for a quicker run; cluster/ never has it), every fuzz
# target for FUZZTIME (default 10s), and every benchmark once (-benchtime=1x)
# so none rots; last, the darwin cross-build and vet of every module
# (scripts/cross-build.sh). Speed is measured with go test -bench and
# benchstat by hand, never here.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fuzztime=${FUZZTIME:-10s}
race=-race
[[ ${RACE:-1} == 0 ]] && race=

need() {
  command -v "$1" >/dev/null && return
  echo "test.sh: $1 is needed: $2" >&2
  exit 1
}
need go "install Go 1.26 from https://go.dev/dl/"
if ! command -v curl >/dev/null; then
  # Lab 01 teaches the watch API with the real curl.
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "test.sh: installing curl (apt-get install curl)"
    { apt-get update -qq && apt-get install -y -qq curl; } >/dev/null || true
  fi
  need curl "install it with your package manager (apt-get install curl, brew install curl)"
fi

checks_failed=0
echo "test.sh: checking that every file names the pinned versions, and every upstream reference a real file"
"$root/scripts/check-versions.sh" || checks_failed=1
"$root/scripts/check-links.sh" || checks_failed=1

"$root/scripts/build-labcluster.sh" || exit 1
labcluster="$root/.cluster/bin/labcluster"

# Which cluster: `labcluster status` applies the rule labkit's test binaries
# follow (clusterstate.Discover): $KUBECONFIG if set (it must answer), else
# .cluster/kubeconfig if it answers. It prints shell assignments (up, from,
# kubeconfig, dir, apiserver, ...) and exits 0 when a cluster is up, 3 when
# none is, 1 when $KUBECONFIG names one that does not answer (it says why).
started=""
found=$("$labcluster" status -o env)
case $? in
0)
  eval "$found"
  export KUBECONFIG="$kubeconfig"
  echo "test.sh: using the cluster of $kubeconfig (found by $from)"
  ;;
3)
  # Our own cluster in a temporary directory, so a learner's .cluster/ is left alone.
  started=$(mktemp -d "${TMPDIR:-/tmp}/labcluster-test.XXXXXX")
  trap '"$labcluster" down --dir "$started" >/dev/null; rm -rf "$started"' EXIT
  "$labcluster" up --dir "$started" || exit 1
  export KUBECONFIG="$started/kubeconfig"
  ;;
*)
  exit 1
  ;;
esac

# cluster/ is built with GOWORK=off (pinned by its own go.mod), so it need
# not be in go.work; it is tested all the same.
modules=$(sed -n 's#^[[:space:]]*\./\([^[:space:]]*\).*#\1#p' go.work)
grep -qx cluster <<<"$modules" || modules="cluster $modules"
passed=0 failed=0 summary=()
for m in $modules; do
  start=$SECONDS
  echo "test.sh: === $m"
  # Output streams as it comes: the first run compiles for minutes, and a
  # silent terminal looks like a hang.
  (
    cd "$m" || exit 1
    modrace=$race
    # cluster/ is the control plane's binary: with -race its tests would
    # rebuild all of k8s.io/kubernetes instrumented (a long, cold build) to
    # check the few goroutines of our supervisor. The labs and labkit, whose
    # concurrency is the lesson, get the race detector.
    [[ $m == cluster ]] && export GOWORK=off && modrace=
    go vet ./... &&
      go test $modrace -count=1 ./... &&
      for pkg in $(go list ./...); do
        dir=$(go list -f '{{.Dir}}' "$pkg")
        for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | cut -c6-); do
          echo "fuzz $pkg $f for $fuzztime"
          # -fuzzminimizetime bounds the time spent shrinking a new
          # interesting input, which otherwise eats the whole run.
          go test -run '^$' -fuzz "^$f\$" -fuzztime "$fuzztime" -fuzzminimizetime 1s "$pkg" || exit 1
        done
        if grep -qs '^func Benchmark' "$dir"/*_test.go; then
          out=$(go test -run '^$' -bench . -benchtime 1x "$pkg" 2>&1) || { echo "$out"; echo "benchmarks of $pkg failed"; exit 1; }
          echo "benchmarks of $pkg ran once"
        fi
      done
  ) 2>&1
  rc=$?
  if [[ $rc == 0 ]]; then
    passed=$((passed + 1)); summary+=("ok    $m ($((SECONDS - start))s)")
  else
    failed=$((failed + 1)); summary+=("FAIL  $m ($((SECONDS - start))s)")
  fi
done

# Learners use macOS as often as Linux: every module must build and vet
# there. Last, because the first run compiles the control plane twice more.
echo "test.sh: cross-building and vetting every module for macOS (darwin/arm64, darwin/amd64)"
"$root/scripts/cross-build.sh" || checks_failed=1

echo
echo "test.sh summary:"
printf '  %s\n' "${summary[@]}"
if [[ $checks_failed != 0 ]]; then
  echo "  FAIL  checks (versions, links or cross-build: see above)"
fi
echo "modules: $passed passed, $failed failed"
[[ $failed == 0 && $checks_failed == 0 ]]
