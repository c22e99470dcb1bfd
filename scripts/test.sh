#!/usr/bin/env bash
# THE test command: go vet and go test in every module of go.work (and
# cluster/, built on its own), against one cluster. It uses the cluster already
# up ($KUBECONFIG, else .cluster/kubeconfig); with none, it starts an embedded
# one for the run and stops it at the end.
#
# What it runs: the version and link checks (scripts/check-versions.sh,
# scripts/check-links.sh); then two lanes at once, since most tests wait on a
# server and one lane leaves half of a 2-core machine idle:
#   - the modules, one after another: gofmt -l, go mod tidy -diff (on its own
#     with GOWORK=off, and in the workspace), go vet (both ways), staticcheck
#     (go tool staticcheck; not cluster/), go test -race (RACE=0 leaves the
#     race detector out, for a quicker run; cluster/ never has it), every fuzz
#     target for FUZZTIME (default 10s), every benchmark once (-benchtime=1x)
#     so none rots. Their output streams as it comes.
#   - the course's checks: every README command as written, every exercise
#     (scripts/check-exercises.sh --full), every diagram, the darwin
#     type-check of every module (scripts/cross-build.sh: go vet, and
#     cluster/internal/portcheck for cluster/), and go mod tidy -diff of the
#     kind node image's modules (kindnode/*). Their output is
#     kept in a log and printed when the modules are done.
# At the end it fails if the run changed any file of the checkout (a go.sum a
# go command tidied, say): a test run must leave the tree as it found it.
# Speed is measured with go test -bench and benchstat by hand, never here.
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

# The live view's browser test (learn/view, TestViewInABrowser) drives
# Debian's chromium, installed here the way scripts/render-diagrams.sh does;
# with a browser found, LABS_REQUIRE_BROWSER makes that test fail rather
# than skip if it cannot start one.
if [[ -z ${CHROMIUM:-} ]] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "test.sh: installing chromium (apt-get install chromium) for the live view's browser test"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null || true
  fi
fi
if [[ -n ${CHROMIUM:-} ]] || command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
  export LABS_REQUIRE_BROWSER=1
else
  echo "test.sh: no chromium (Debian: apt-get install chromium; or set CHROMIUM=/path/to/chrome): the live view's browser test will skip"
fi

# Nothing a test run does may rewrite a tracked file: a go.sum or go.work.sum
# a go command tidied, a golden file a test regenerated. The state of the
# tracked files (and the list of untracked ones) is taken now and compared at
# the end; a learner's own uncommitted edits are part of both, so they pass.
tree_state() {
  git -C "$root" diff HEAD --binary 2>/dev/null | cksum
  git -C "$root" ls-files --others --exclude-standard 2>/dev/null
}
in_git=0
git -C "$root" rev-parse --git-dir >/dev/null 2>&1 && in_git=1
((in_git)) && tree_before=$(tree_state) && status_before=$(git -C "$root" status --porcelain=v1 2>/dev/null)

# On exit (or Ctrl-C): stop the checks lane, then the cluster we started.
started="" checks_pid=""
cleanup() {
  [[ -n $checks_pid ]] && kill -- "-$checks_pid" 2>/dev/null
  [[ -n $started ]] && { "$labcluster" down --dir "$started" >/dev/null; rm -rf "$started"; }
}
trap cleanup EXIT
trap 'exit 130' INT TERM

checks_failed=0
echo "test.sh: checking that every file names the pinned versions, and every upstream reference a real file"
"$root/scripts/check-versions.sh" || checks_failed=1
"$root/scripts/check-links.sh" || checks_failed=1

"$root/scripts/build-labcluster.sh" || exit 1
labcluster="$root/.cluster/bin/labcluster"

# Which cluster: `labcluster status` applies the rule labkit's test binaries
# follow (clusterstate.Discover): $KUBECONFIG if set (it must answer, unless
# it is this checkout's .cluster/kubeconfig), else .cluster/kubeconfig if it
# answers. It prints shell assignments (up, from, kubeconfig, dir, apiserver,
# ...) and exits 0 when a cluster is up, 3 when none is, 1 when $KUBECONFIG
# names another one that does not answer (it says why and what to do).
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
# The checks lane: the course's own promises, each checked the way a learner
# would meet it: every command a README shows, run as written with the output
# it shows (labkit's TestREADMECommands, in its own copy of the checkout);
# every exercise fails as shipped, passes solved, and in exercise mode only
# the exercises' tests fail; every mermaid diagram renders; every module
# type-checks for macOS (and vets there, all but cluster/). It runs beside the modules and reports in its log.
checks_log=$(mktemp "${TMPDIR:-/tmp}/test-sh-checks.XXXXXX")
checks_rc=$(mktemp "${TMPDIR:-/tmp}/test-sh-checks-rc.XXXXXX")
set -m # the lane gets its own process group, so cleanup can stop all of it
(
  rc=0
  step() { echo "test.sh: $1"; shift; "$@" || rc=1; }
  step "every command the READMEs show, run as written (labkit TestREADMECommands)" \
    bash -c 'cd "$1/labkit" && go test -v -count=1 -timeout 30m -run "^TestREADMECommands\$" . -args -readmes' _ "$root"
  step "every exercise fails as shipped and passes solved, and only the exercises' tests fail (scripts/check-exercises.sh --full)" \
    "$root/scripts/check-exercises.sh" --full
  step "every README diagram renders (scripts/render-diagrams.sh)" "$root/scripts/render-diagrams.sh"
  # Learners use macOS as often as Linux: every module must type-check there
  # (and vet: all but cluster/, which cross-build.sh says why).
  step "type-checking every module for macOS (darwin/arm64, darwin/amd64; scripts/cross-build.sh)" "$root/scripts/cross-build.sh"
  # kindnode/*: the kind node image's programs (scripts/kind-node-image.sh),
  # modules outside go.work with no code of their own; they too must be
  # tidy on their own. (What versions they pin, cluster/kindpath tests.)
  step "the kind node image's modules are tidy on their own (kindnode/*: GOWORK=off go mod tidy -diff)" \
    bash -c 'for m in "$1"/kindnode/*/; do (cd "$m" && GOWORK=off go mod tidy -diff) || { echo "kindnode/$(basename "$m") is not tidy (run: cd kindnode/$(basename "$m") && GOWORK=off go mod tidy)"; exit 1; }; done' _ "$root"
  echo "$rc" >"$checks_rc"
) >"$checks_log" 2>&1 </dev/null &
checks_pid=$!
set +m
echo "test.sh: the README, exercise, diagram and macOS checks run alongside the modules (their log: $checks_log, printed at the end)"

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
    # Go habits a Go developer has by reflex: gofmt, go mod tidy (the module
    # must be tidy on its own, GOWORK=off, and inside go.work), go vet, and
    # staticcheck (labkit's tool directive pins it; cluster/ is left out: it
    # would analyse all of Kubernetes again, and go vet covers our code there).
    unformatted=$(gofmt -l .)
    if [[ -n $unformatted ]]; then
      echo "gofmt would change these files (run gofmt -w on them):"; echo "$unformatted"; exit 1
    fi
    GOWORK=off go mod tidy -diff || { echo "go.mod/go.sum of $m are not tidy with GOWORK=off (run: cd $m && GOWORK=off go mod tidy)"; exit 1; }
    if [[ $m != cluster ]]; then
      go mod tidy -diff || { echo "go.mod/go.sum of $m are not tidy in the workspace (run: cd $m && go mod tidy)"; exit 1; }
      GOWORK=off go vet ./... || { echo "$m does not vet on its own (GOWORK=off)"; exit 1; }
    fi
    go vet ./... &&
      { [[ $m == cluster ]] || go tool staticcheck ./...; } &&
      go test $modrace -count=1 ./... &&
      for pkg in $(go list ./...); do
        dir=$(go list -f '{{.Dir}}' "$pkg")
        for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | cut -c6-); do
          # fuzz.sh names a failing input and the fuzzer's message, keeps
          # the input in testdata/fuzz, and does not fail on machine load
          # alone (a starved worker, Go 1.26's deadline race): see its header.
          "$root/scripts/fuzz.sh" "$pkg" "$f" "$fuzztime" || exit 1
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

echo "test.sh: modules done; the checks that ran alongside:"
# Their log so far, then the rest as it comes, until the lane ends (a
# portable tail -f --pid: macOS's tail has no --pid).
offset=0
while :; do
  alive=0
  kill -0 "$checks_pid" 2>/dev/null && alive=1
  size=$(wc -c <"$checks_log")
  if ((size > offset)); then
    tail -c +$((offset + 1)) "$checks_log" | head -c $((size - offset))
    offset=$size
  fi
  ((alive)) || break
  sleep 1
done
wait "$checks_pid"
checks_pid=""
[[ $(cat "$checks_rc" 2>/dev/null) == 0 ]] || checks_failed=1
rm -f "$checks_log" "$checks_rc"

tree_changed=0
if ((in_git)) && [[ $(tree_state) != "$tree_before" ]]; then
  tree_changed=1
  echo "test.sh: the run changed files in the checkout (a tool or test rewrote them; git diff shows how):"
  changed=$(diff <(echo "$status_before") <(git -C "$root" status --porcelain=v1) | sed -n 's/^[<>] /  /p')
  echo "${changed:-  (only files that were already modified before the run: see git diff)}"
fi

echo
echo "test.sh summary:"
printf '  %s\n' "${summary[@]}"
if [[ $checks_failed != 0 ]]; then
  echo "  FAIL  checks (versions, links, README commands, exercises, diagrams or macOS vet: see above)"
fi
if [[ $tree_changed != 0 ]]; then
  echo "  FAIL  the run changed tracked files (see above)"
fi
echo "modules: $passed passed, $failed failed"
[[ $failed == 0 && $checks_failed == 0 && $tree_changed == 0 ]]
