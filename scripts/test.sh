#!/usr/bin/env bash
# THE test command: go vet and go test in every module of go.work (and
# cluster/, built on its own), against one cluster. It uses the cluster already
# up ($KUBECONFIG, else .cluster/kubeconfig); with none, it starts an embedded
# one for the run and stops it at the end.
#
# What it runs: the version and link checks (scripts/check-versions.sh,
# scripts/check-links.sh); every module's dependencies downloaded up front;
# then three lanes at once, since most tests wait on a server or a timeout
# and one lane leaves most of a 2-core machine idle:
#   - the modules, one at a time (MODULE_JOBS=2: two), longest first: gofmt -l, go
#     mod tidy -diff (on its own with GOWORK=off, and in the workspace), go
#     vet (both ways), staticcheck (go tool staticcheck; not cluster/), go
#     test -race (RACE=0 leaves the race detector out, for a quicker run;
#     cluster/ never has it), every fuzz target for FUZZTIME (default 10s),
#     every benchmark once (-benchtime=1x) so none rots. Each module's output
#     is printed when it is done, and a line a minute names what runs.
#   - the README check: every README command as written, each README in a
#     copy of the checkout with a cluster of its own, two at once.
#   - the other course checks: every exercise (scripts/check-exercises.sh
#     --full), every diagram, the darwin type-check of every module
#     (scripts/cross-build.sh), and go mod tidy -diff of the kind node
#     image's modules (kindnode/*).
# The two check lanes keep logs, printed when the modules are done. A table
# of what took how long ends the run.
# At the end it fails if the run changed any file of the checkout (a go.sum a
# go command tidied, say): a test run must leave the tree as it found it.
# Speed is measured with go test -bench and benchstat by hand, never here.
#
# Ctrl-C or SIGTERM stops both lanes (the README check stops its clusters and
# the command it was running), the cluster test.sh started, and removes the
# run's temporary files: "test.sh: interrupted; stopped ...", exit 130.
#
#   scripts/test.sh                       everything (CI runs exactly this)
#   scripts/test.sh --readmes-only RE     only the README check, on the READMEs
#                                         whose path matches RE ('labs/02')
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
readmes_only=""
while (($#)); do
  case $1 in
  --readmes-only)
    [[ $# -ge 2 ]] || { echo "test.sh: --readmes-only needs a regexp of README paths (e.g. 'labs/02')" >&2; exit 2; }
    readmes_only=$2; shift 2 ;;
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "test.sh: unknown argument $1 (scripts/test.sh --help)" >&2; exit 2 ;;
  esac
done
fuzztime=${FUZZTIME:-10s}
# -trimpath for every build of the run (the README check's commands and the
# exercise checks inherit it): without it the go command keys a package of
# this checkout by its directory, so a fresh clone, and each copy the README
# check makes, compiles every package of the course again although the
# build cache holds the same code from the last run (lab 04's test build in
# a second fresh clone: 19 CPU-seconds without, 9 with). Nothing in the
# course reads its own source paths (no runtime.Caller). The build cache
# then holds a second copy of the dependencies' packages, once; scripts/
# cluster-up.sh and a learner's own go test do not use it.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"
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

# The run's own files: the checks lane's log, the lanes' summaries and times.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-sh.XXXXXX")
times_file=$tmp/times

# stop_lanes: each lane is a process group of its own (set -m below). First
# $tmp/stopping, which a lane reads before its next step or module (bash runs
# a background job with SIGINT ignored, so a lane's own shell does not stop
# on it); then SIGINT to both groups, what a terminal's Ctrl-C would send: go
# test waits for its test binary, which stops what it started (the README
# check its clusters and its command, labkit a cluster of its own). What
# still runs 30 s later gets SIGTERM, at 90 s SIGKILL, and so does anything
# of a group that outlived its lane.
stop_lanes() {
  local pids=() pid i alive
  for pid in "$modules_pid" "$readme_pid" "$checks_pid"; do
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && pids+=("$pid")
  done
  modules_pid="" readme_pid="" checks_pid=""
  ((${#pids[@]})) || return 0
  : >"$tmp/stopping"
  for pid in "${pids[@]}"; do kill -INT -- "-$pid" 2>/dev/null; done
  for ((i = 0; i < 900; i++)); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    if ((i == 300)); then
      for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
    fi
    sleep 0.1
  done
  for pid in "${pids[@]}"; do
    kill -KILL -- "-$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  return 0
}
# On exit: stop whatever lane still runs, then the cluster we started, and
# remove the run's files. On Ctrl-C or SIGTERM: the same, said, and exit 130.
started="" modules_pid="" readme_pid="" checks_pid=""
cleanup() {
  stop_lanes
  [[ -n $started ]] && { "$labcluster" down --dir "$started" >/dev/null; rm -rf "$started"; }
  rm -rf "$tmp"
}
interrupted() {
  trap '' INT TERM
  echo
  echo "test.sh: interrupted; stopping the modules lane, the README check (it stops its clusters and the command it runs), the checks lane and the cluster test.sh started"
  local what=() log
  [[ -n $modules_pid ]] && what+=("the modules lane")
  [[ -n $readme_pid ]] && what+=("the README check")
  [[ -n $checks_pid ]] && what+=("the checks lane")
  [[ -n $started ]] && what+=("test.sh's cluster")
  stop_lanes
  for log in "$tmp/readme.log" "$tmp/checks.log"; do
    if [[ -s $log ]]; then
      echo "test.sh: the last lines of $(basename "$log"):"
      tail -n 6 "$log" | sed 's/^/  /'
    fi
  done
  cleanup
  started=""
  what+=("its temporary files")
  local IFS=,
  echo "test.sh: interrupted; stopped ${what[*]}" | sed 's/,/, /g'
  exit 130
}
trap cleanup EXIT
trap interrupted INT TERM

checks_failed=0
# took SECONDS LABEL [CPU0]: one row of the time table printed at the end;
# with CPU0 (cpu_ticks when the step began), also the CPU time the step's
# processes used, so the table shows where the machine's cores went, not
# only where the lanes waited.
took() {
  local c=-
  if [[ -n ${3:-} ]]; then
    cpu_ticks
    c=$(((cpu - $3) / clk_tck))
  fi
  echo "$1|$c|$2" >>"$times_file"
}
# cpu_ticks: sets $cpu to the CPU time (user + system, in clock ticks) used
# so far by the calling shell's children that have ended, from
# /proc/PID/stat (cutime and cstime); 0 where there is no /proc (macOS), so
# the table shows 0 there.
clk_tck=$(getconf CLK_TCK 2>/dev/null || echo 100)
# It sets $cpu rather than printing it: in a $(...) it would read the
# subshell's own children.
cpu_ticks() {
  cpu=0
  [[ -r /proc/$BASHPID/stat ]] || return 0
  local s
  read -r s </proc/$BASHPID/stat
  s=${s##*) }
  # shellcheck disable=SC2086 # split into fields on purpose
  set -- $s
  cpu=$((${14} + ${15}))
}
if [[ -z $readmes_only ]]; then
  step_start=$SECONDS; cpu_ticks; cpu0=$cpu
  echo "test.sh: checking that every file names the pinned versions, and every upstream reference a real file"
  "$root/scripts/check-versions.sh" || checks_failed=1
  "$root/scripts/check-links.sh" || checks_failed=1
  took $((SECONDS - step_start)) "versions and links (check-versions.sh, check-links.sh)" "$cpu0"
fi

# Every module the run needs, downloaded once and up front: on a new machine
# the lanes below would otherwise each fetch what they first touch, and a
# README command run before the modules lane reached its module printed "go:
# downloading ..." into output the check compares. go mod download with no
# argument fetches every module a module's go.mod requires (Go >= 1.17 lists
# them all), each module on its own (GOWORK=off): the workspace selects, for
# each dependency, the highest version one of its modules selects, so that
# covers it too (go mod download in the workspace would add to go.work.sum
# the checksums of modules no build needs).
step_start=$SECONDS; cpu_ticks; cpu0=$cpu
echo "test.sh: downloading every module the run needs (go mod download; seconds when cached)"
for m in $(sed -n 's#^[[:space:]]*\./\([^[:space:]]*\).*#\1#p' go.work) cluster kindnode/*/ labs/04-cacher/etcd3/testdata/etcd-3.6; do
  # go mod tidy also loads the tests of the dependencies' packages, from
  # modules go mod download leaves out: -diff changes nothing, and fetches
  # them now rather than in the middle of a module's log (its verdict comes
  # later, in the modules lane).
  (cd "$m" && GOWORK=off go mod download && { GOWORK=off go mod tidy -diff >/dev/null 2>&1 || true; }) ||
    { echo "test.sh: go mod download failed in $m (is the Go module proxy reachable? go env GOPROXY says $(go env GOPROXY))"; exit 1; }
done
took $((SECONDS - step_start)) "modules downloaded (go mod download)" "$cpu0"

step_start=$SECONDS; cpu_ticks; cpu0=$cpu
"$root/scripts/build-labcluster.sh" || exit 1
labcluster="$root/.cluster/bin/labcluster"
took $((SECONDS - step_start)) "labcluster built (scripts/build-labcluster.sh)" "$cpu0"

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
grep -qx cluster <<<"$modules" || modules=$(printf 'cluster\n%s\n' "$modules")

# The fuzzer keeps every input it found interesting in $GOCACHE/fuzz and
# replays them all before it starts: left alone, a target's corpus grows run
# after run (180 inputs, seconds of "gathering baseline coverage" before a
# 10-second fuzz even starts). Inputs that failed are kept in the package's
# testdata/fuzz, not there; a target with more than 100 is started afresh.
fuzzcache="$(go env GOCACHE)/fuzz"
if [[ -d $fuzzcache ]]; then
  while IFS= read -r d; do
    n=$(find "$d" -maxdepth 1 -type f | wc -l)
    if ((n > 100)); then
      rm -rf "$d" && echo "test.sh: the fuzz cache of ${d#"$fuzzcache"/} held $n inputs; started it afresh"
    fi
  done < <(find "$fuzzcache" -type d -name 'Fuzz*')
fi

# The checks: the course's own promises, each checked the way a learner
# would meet it, in two lanes beside the modules lane (each mostly waits: on
# a server, a timeout, a compile), each with a log printed when the modules
# are done:
#   - the README lane: every command a README shows, run as written with the
#     output it shows (labkit's TestREADMECommands, each README in its own
#     copy of the checkout with its own cluster, two at once);
#   - the checks lane: every exercise fails as shipped, passes solved, and in
#     exercise mode only the exercises' tests fail; every mermaid diagram
#     renders; every module type-checks for macOS (and vets there, all but
#     cluster/); the kind node image's modules are tidy.
readme_args=(-readmes)
[[ -n $readmes_only ]] && readme_args+=(-readme "$readmes_only")
# step LABEL COMMAND...: one check of a lane, timed; a lane's status goes to
# $tmp/LANE.rc when it ends.
step() {
  local label=$1 t=$SECONDS cpu0
  shift
  [[ -e $tmp/stopping ]] && exit 130
  echo "test.sh: $label"
  cpu_ticks; cpu0=$cpu
  "$@" || rc=1
  took $((SECONDS - t)) "checks: $label" "$cpu0"
}
readme_lane() {
  rc=0
  step "every command the READMEs show, run as written (labkit TestREADMECommands)" \
    bash -c 'cd "$1/labkit" && shift && go test -v -count=1 -timeout 40m -run "^TestREADMECommands\$" . -args "$@"' _ "$root" "${readme_args[@]}"
  echo "$rc" >"$tmp/readme.rc"
}
# exercises_by_lab: scripts/check-exercises.sh --full for each lab, two at
# once (each lab's check mostly waits on its tests; more at once only loads
# a 2-core machine further, beside three other lanes), each lab's output
# printed whole, in order.
exercises_by_lab() {
  local labs=() lab i rc=0 pids=()
  for lab in "$root"/labs/[0-9][0-9]-*/; do
    lab=$(basename "$lab")
    labs+=("${lab%%-*}")
  done
  for ((i = 0; i < ${#labs[@]}; i++)); do
    if ((i >= 2)); then
      wait "${pids[i - 2]}" || rc=1
    fi
    "$root/scripts/check-exercises.sh" --full "${labs[i]}" >"$tmp/exercises-${labs[i]}.log" 2>&1 &
    pids+=($!)
  done
  for ((i = ${#labs[@]} > 2 ? ${#labs[@]} - 2 : 0; i < ${#labs[@]}; i++)); do
    wait "${pids[i]}" || rc=1
  done
  for lab in "${labs[@]}"; do
    cat "$tmp/exercises-$lab.log"
  done
  return $rc
}
checks_lane() {
  rc=0
  step "every exercise fails as shipped and passes solved, and only the exercises' tests fail (scripts/check-exercises.sh --full, two labs at once)" \
    exercises_by_lab
  step "every README diagram renders (scripts/render-diagrams.sh)" "$root/scripts/render-diagrams.sh"
  # Learners use macOS as often as Linux: every module must type-check
  # there (cross-build.sh says how, and what --vet adds).
  step "type-checking every module for macOS (darwin/arm64, darwin/amd64; scripts/cross-build.sh)" "$root/scripts/cross-build.sh"
  # kindnode/*: the kind node image's programs (scripts/kind-node-image.sh),
  # modules outside go.work with no code of their own; they too must be
  # tidy on their own. (What versions they pin, cluster/kindpath tests.)
  step "the kind node image's modules are tidy on their own (kindnode/*: GOWORK=off go mod tidy -diff)" \
    bash -c 'for m in "$1"/kindnode/*/; do (cd "$m" && GOWORK=off go mod tidy -diff) || { echo "kindnode/$(basename "$m") is not tidy (run: cd kindnode/$(basename "$m") && GOWORK=off go mod tidy)"; exit 1; }; done' _ "$root"
  echo "$rc" >"$tmp/checks.rc"
}
set -m # each lane gets its own process group, so an interrupt can stop all of it
(readme_lane) >"$tmp/readme.log" 2>&1 </dev/null &
readme_pid=$!
if [[ -z $readmes_only ]]; then
  (checks_lane) >"$tmp/checks.log" 2>&1 </dev/null &
  checks_pid=$!
fi
set +m
echo "test.sh: the README check, and the exercise, diagram and macOS checks, run alongside the modules (their logs: $tmp/readme.log, $tmp/checks.log, printed at the end)"

# The modules lane: each module in turn, its output streaming as it comes
# (the first run compiles for minutes, and a silent terminal looks like a
# hang). One line per module goes to $tmp/summary.
module_checks() {
  local m=$1 modrace=$race
  cd "$m" || return 1
  # cluster/ is the control plane's binary: with -race its tests would
  # rebuild all of k8s.io/kubernetes instrumented (a long, cold build) to
  # check the few goroutines of our supervisor. The labs and labkit, whose
  # concurrency is the lesson, get the race detector.
  [[ $m == cluster ]] && export GOWORK=off && modrace=
  # Go habits a Go developer has by reflex: gofmt, go mod tidy (the module
  # must be tidy on its own, GOWORK=off, and inside go.work), go vet, and
  # staticcheck (labkit's tool directive pins it; cluster/ is left out: it
  # would analyse all of Kubernetes again, and go vet covers our code there).
  local unformatted
  unformatted=$(gofmt -l .)
  if [[ -n $unformatted ]]; then
    echo "gofmt would change these files (run gofmt -w on them):"; echo "$unformatted"; return 1
  fi
  GOWORK=off go mod tidy -diff || { echo "go.mod/go.sum of $m are not tidy with GOWORK=off (run: cd $m && GOWORK=off go mod tidy)"; return 1; }
  if [[ $m != cluster ]]; then
    go mod tidy -diff || { echo "go.mod/go.sum of $m are not tidy in the workspace (run: cd $m && go mod tidy)"; return 1; }
    GOWORK=off go vet ./... || { echo "$m does not vet on its own (GOWORK=off)"; return 1; }
  fi
  go vet ./... || return 1
  [[ $m == cluster ]] || go tool staticcheck ./... || return 1
  go test $modrace -count=1 ./... || return 1
  local pkg dir f out
  for pkg in $(go list ./...); do
    dir=$(go list -f '{{.Dir}}' "$pkg")
    for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | cut -c6-); do
      # fuzz.sh names a failing input and the fuzzer's message, keeps the
      # input in testdata/fuzz, and does not fail on machine load alone (a
      # starved worker, Go 1.26's deadline race): see its header.
      "$root/scripts/fuzz.sh" "$pkg" "$f" "$fuzztime" || return 1
    done
    if grep -qs '^func Benchmark' "$dir"/*_test.go; then
      out=$(go test -run '^$' -bench . -benchtime 1x "$pkg" 2>&1) || { echo "$out"; echo "benchmarks of $pkg failed"; return 1; }
      echo "benchmarks of $pkg ran once"
    fi
  done
}
summary_file=$tmp/summary
: >"$summary_file"
# The modules run $jobs at a time (MODULE_JOBS, default 1, and 2 once the
# check lanes are done: see below). Two overlap well where tests wait, but
# beside the two check lanes they load a 2-core machine to 30-40, where
# timing windows of a few tests close (the live view's real-cluster test,
# lab 03's scenarios on the miniapiserver). Longest first, so that no long one starts
# last; a module not named here runs after these. Each worker takes the next
# module from $tmp/queue by renaming it into $tmp/running (a rename is
# atomic, so no two take the same), runs it into a log of its own, and
# prints that log whole when the module is done, so two modules' lines never
# interleave.
jobs=${MODULE_JOBS:-1}
longest_first="learn labs/04-cacher labs/05-informer labs/03-watchserver robustness labkit labs/02-listwatcher cluster labs/01-watch-curl clusterstate"
mkdir -p "$tmp/queue" "$tmp/running"
n=0
for m in $longest_first $modules; do
  grep -qx "$m" <<<"$modules" || continue
  [[ -n $(grep -lx "$m" "$tmp/queue"/* 2>/dev/null) ]] && continue
  n=$((n + 1))
  echo "$m" >"$tmp/queue/$(printf '%03d' "$n")"
done
modules_worker() {
  local f m start status cpu0
  while :; do
    [[ -e $tmp/stopping ]] && return 130
    f=$(ls "$tmp/queue" | head -n 1)
    [[ -n $f ]] || return 0
    mv "$tmp/queue/$f" "$tmp/running/$f" 2>/dev/null || continue
    m=$(cat "$tmp/running/$f")
    echo "$SECONDS" >"$tmp/running/$f.start"
    start=$SECONDS; cpu_ticks; cpu0=$cpu
    status=ok
    (module_checks "$m") >"$tmp/module-$f.log" 2>&1 </dev/null || status=FAIL
    until mkdir "$tmp/print.lock" 2>/dev/null; do sleep 0.1; done
    echo "test.sh: === $m: $status ($((SECONDS - start))s)"
    cat "$tmp/module-$f.log"
    rmdir "$tmp/print.lock"
    printf '%-5s %s (%ds)\n' "$status" "$m" $((SECONDS - start)) >>"$summary_file"
    took $((SECONDS - start)) "modules: $m" "$cpu0"
    rm -f "$tmp/running/$f" "$tmp/running/$f.start" "$tmp/module-$f.log"
  done
}
if [[ -z $readmes_only ]]; then
  echo "test.sh: the modules, $jobs at a time$([[ -z ${MODULE_JOBS:-} ]] && echo " (two once the check lanes are done)"), each one's output when it is done: gofmt, go mod tidy, go vet, staticcheck, go test${race:+ $race}, fuzz, benchmarks once"
  set -m
  (
    set +m # the workers stay in the lane's process group
    for ((w = 0; w < jobs; w++)); do
      modules_worker &
    done
    # Once both check lanes are done (each writes its .rc as it ends), a
    # second worker takes modules from the queue too: then the machine is
    # no longer loaded by them, and one module at a time leaves a core
    # idle (a warm run on 2 cores: the check lanes done at ~310 s, the
    # modules one by one until ~600 s at half the CPU's capacity).
    # MODULE_JOBS, when set, is the number of workers throughout.
    if [[ -z ${MODULE_JOBS:-} ]]; then
      while [[ -n $(ls "$tmp/queue") && ! -e $tmp/stopping ]]; do
        if [[ -e $tmp/readme.rc && -e $tmp/checks.rc ]]; then
          echo "test.sh: the check lanes are done; a second worker takes the next modules"
          modules_worker &
          break
        fi
        sleep 1
      done
    fi
    wait
  ) </dev/null &
  modules_pid=$!
  set +m
  # A line a minute naming what runs, so a long module (or the first,
  # compiling for minutes on a new machine) is not mistaken for a hang.
  last=$SECONDS
  while kill -0 "$modules_pid" 2>/dev/null; do
    sleep 1
    if ((SECONDS - last >= 60)); then
      last=$SECONDS
      running=""
      for f in "$tmp/running"/*.start; do
        [[ -e $f ]] || continue
        running+=" $(cat "${f%.start}") ($((SECONDS - $(cat "$f")))s),"
      done
      [[ -n $running ]] && echo "test.sh: running:${running%,}"
    fi
  done
  wait "$modules_pid"
  modules_pid=""
fi

echo "test.sh: modules done; the checks that ran alongside:"
# follow LOG PID: the log so far, then the rest as it comes, until the lane
# ends (a portable tail -f --pid: macOS's tail has no --pid).
follow() {
  local log=$1 pid=$2 offset=0 alive size
  [[ -n $pid ]] || return 0
  while :; do
    alive=0
    kill -0 "$pid" 2>/dev/null && alive=1
    size=$(wc -c <"$log")
    if ((size > offset)); then
      tail -c +$((offset + 1)) "$log" | head -c $((size - offset))
      offset=$size
    fi
    ((alive)) || break
    sleep 1
  done
  wait "$pid"
}
follow "$tmp/readme.log" "$readme_pid"
readme_pid=""
[[ $(cat "$tmp/readme.rc" 2>/dev/null) == 0 ]] || checks_failed=1
if [[ -z $readmes_only ]]; then
  follow "$tmp/checks.log" "$checks_pid"
  checks_pid=""
  [[ $(cat "$tmp/checks.rc" 2>/dev/null) == 0 ]] || checks_failed=1
fi

tree_changed=0
if ((in_git)) && [[ $(tree_state) != "$tree_before" ]]; then
  tree_changed=1
  echo "test.sh: the run changed files in the checkout (a tool or test rewrote them; git diff shows how):"
  changed=$(diff <(echo "$status_before") <(git -C "$root" status --porcelain=v1) | sed -n 's/^[<>] /  /p')
  echo "${changed:-  (only files that were already modified before the run: see git diff)}"
fi

echo
echo "test.sh times (seconds: wall, and the CPU its processes used; the three lanes run at once on $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo "?") cores):"
echo "   wall    cpu"
awk -F'|' '{printf "  %5d  %5s  %s\n", $1, $2, $3; if ($2 != "-") cpu += $2} END {printf "  %5d  %5d  in all\n", '"$SECONDS"', cpu}' "$times_file"
echo
echo "test.sh summary:"
passed=$(grep -c '^ok ' "$summary_file")
failed=$(grep -c '^FAIL ' "$summary_file")
sed 's/^/  /' "$summary_file"
if [[ $checks_failed != 0 ]]; then
  echo "  FAIL  checks (versions, links, README commands, exercises, diagrams or macOS vet: see above)"
fi
if [[ $tree_changed != 0 ]]; then
  echo "  FAIL  the run changed tracked files (see above)"
fi
echo "modules: $passed passed, $failed failed"
[[ $failed == 0 && $checks_failed == 0 && $tree_changed == 0 ]]
