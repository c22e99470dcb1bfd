#!/usr/bin/env bash
# THE test command: go vet and go test in every module of go.work, against one
# cluster. It uses the cluster already up ($KUBECONFIG, else .cluster/kubeconfig);
# with none, it starts an embedded one for the run and stops it at the end.
# Fuzz targets run for FUZZTIME each (default 10s) and every benchmark runs once
# (-benchtime=1x) so none rots; speed is measured with go test -bench by hand.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fuzztime=${FUZZTIME:-10s}

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

# Every module of go.work, and cluster/, which is not in it: it is built with
# GOWORK=off so that k8s.io/kubernetes stays out of the labs' build list.
modules="$(sed -n 's#^[[:space:]]*\./\([^[:space:]]*\).*#\1#p' go.work) cluster"
passed=0 failed=0 summary=()
for m in $modules; do
  start=$SECONDS
  log=$(mktemp)
  (
    cd "$m" || exit 1
    # cluster/ is built with GOWORK=off (pinned by its own go.mod); vet it the same way.
    [[ $m == cluster ]] && export GOWORK=off
    go vet ./... &&
      go test -count=1 ./... &&
      for pkg in $(go list ./...); do
        dir=$(go list -f '{{.Dir}}' "$pkg")
        for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | cut -c6-); do
          echo "fuzz $pkg $f for $fuzztime"
          go test -run '^$' -fuzz "^$f\$" -fuzztime "$fuzztime" "$pkg" || exit 1
        done
        if grep -qs '^func Benchmark' "$dir"/*_test.go; then
          out=$(go test -run '^$' -bench . -benchtime 1x "$pkg" 2>&1) || { echo "$out"; echo "benchmarks of $pkg failed"; exit 1; }
          echo "benchmarks of $pkg ran once"
        fi
      done
  ) >"$log" 2>&1
  rc=$?
  cat "$log"
  if [[ $rc == 0 ]]; then
    passed=$((passed + 1)); summary+=("ok    $m ($((SECONDS - start))s)")
  else
    failed=$((failed + 1)); summary+=("FAIL  $m ($((SECONDS - start))s)")
  fi
  rm -f "$log"
done

echo
echo "test.sh summary:"
printf '  %s\n' "${summary[@]}"
echo "modules: $passed passed, $failed failed"
[[ $failed == 0 ]]
