#!/usr/bin/env bash
# fuzz.sh PKG TARGET FUZZTIME: fuzz one target, as scripts/test.sh's fuzz step
# does, and tell a failing input apart from a machine too busy to fuzz.
#
#   scripts/fuzz.sh ./listwatcher FuzzDecode 10s     (run inside the module)
#
# A failure names the input and the fuzzer's message, and the input stays in
# the package's testdata/fuzz/TARGET/, where plain `go test` replays it from
# then on: commit it with the fix. What go test -fuzz can print, and what this
# script makes of it (the lines cited are Go 1.26's own source, $GOROOT/src):
#
#  - "Failing input written to testdata/fuzz/T/ID": the fuzzer saved an input
#    (testing/fuzz.go:372-374). The input is replayed once without the fuzzer
#    (go test -run T/ID, 2 minutes at most). If it fails there, it is a real
#    bug: exit 1. If it passes and the message was "fuzzing process hung or
#    terminated unexpectedly", the worker process died or missed the
#    fuzzer's fixed 10-second limit for one input
#    (internal/fuzz/worker.go:492-494,186), which a starved CPU causes
#    (golang/go#56238): the input is no crasher, so it is printed and
#    removed, and the target is fuzzed once more.
#  - "failure while testing seed corpus entry: T/NAME": an input already in
#    testdata/fuzz (or an f.Add seed) fails (internal/fuzz/fuzz.go:248): exit 1.
#  - "context deadline exceeded" and no input written: the fuzzer ran out its
#    -fuzztime and then reported its own deadline as an error. That is a race
#    in Go's coordinator: stop() drops the deadline only when it equals
#    fuzzCtx.Err() (internal/fuzz/fuzz.go:129), but the loop can wake on the
#    parent's Done (fuzz.go:225-228) before the child context is cancelled,
#    which a busy machine makes likelier (golang/go#75804, fixed in Go 1.27).
#    Nothing was found; the target is fuzzed once more.
#
# A second load-only failure in a row is reported and not counted: machine
# load alone never fails the step. Anything else fails it, with the output.
set -uo pipefail
pkg=$1 target=$2 fuzztime=$3
dir=$(go list -f '{{.Dir}}' "$pkg") || exit 1

# fuzz_once: 0 passed, 1 a real failure (reported), 2 machine load (reported).
fuzz_once() {
  local out rc path id msg log
  # -fuzzminimizetime bounds the time spent shrinking a new interesting input,
  # which otherwise eats the whole run. The output streams as it comes (the
  # first run builds with coverage for minutes) and is kept to be read after.
  log=$(mktemp "${TMPDIR:-/tmp}/fuzz-sh.XXXXXX")
  go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" -fuzzminimizetime 1s "$pkg" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  out=$(cat "$log")
  rm -f "$log"
  ((rc == 0)) && return 0
  # The fuzzer's message: the indented lines after "--- FAIL: T (...)", up to
  # the "Failing input written" line.
  msg=$(printf '%s\n' "$out" | sed -n "/^--- FAIL: $target /,/^FAIL/p" | sed '1d;/^FAIL/d;/Failing input written/,$d' | sed 's/^ *//')
  path=$(printf '%s\n' "$out" | sed -n 's/^ *Failing input written to //p' | head -1)
  if [[ -n $path ]]; then
    [[ $path = /* ]] || path=$dir/$path
    id=$(basename "$path")
    # An input that hangs the target fails the replay by its timeout.
    if go test -count=1 -timeout 2m -run "^$target/$id\$" "$pkg" >/dev/null 2>&1; then
      if [[ $msg == *"fuzzing process hung or terminated unexpectedly"* ]]; then
        echo "fuzz.sh: $target: a fuzzing worker died or hung ($msg), but its input passes when replayed: machine load, not a bug. The input was:"
        cat "$path"
        rm -f "$path"
        rmdir "$dir/testdata/fuzz/$target" "$dir/testdata/fuzz" "$dir/testdata" 2>/dev/null
        return 2
      fi
      echo "fuzz.sh: $target failed on $path, which passes when replayed alone; kept. The fuzzer said: $msg"
    else
      echo "fuzz.sh: $target found a failing input: $path"
      echo "fuzz.sh: the fuzzer said: $msg"
      echo "fuzz.sh: it is kept there, so plain go test replays it (go test -run '$target/$id' $pkg); commit it with the fix."
    fi
    return 1
  fi
  local seed
  seed=$(printf '%s\n' "$out" | sed -n 's/^failure while testing seed corpus entry: //p' | head -1)
  if [[ -n $seed ]]; then
    local where="an f.Add seed of $target (named by its position, $seed)"
    [[ -f $dir/testdata/fuzz/$seed ]] && where=$dir/testdata/fuzz/$seed
    echo "fuzz.sh: $target fails on a seed input: $where"
    echo "fuzz.sh: the fuzzer said: $msg"
    return 1
  fi
  if [[ $msg == "context deadline exceeded" ]]; then
    echo "fuzz.sh: $target ran its $fuzztime and found nothing, then Go's fuzz coordinator reported its own deadline (\"context deadline exceeded\", golang/go#75804): not a failure of the code."
    return 2
  fi
  echo "fuzz.sh: $target failed (go test exit $rc), with no input saved; its output is above"
  return 1
}

echo "fuzz $pkg $target for $fuzztime"
fuzz_once
case $? in
0) exit 0 ;;
1) exit 1 ;;
esac
echo "fuzz.sh: fuzzing $target once more"
fuzz_once
case $? in
0) exit 0 ;;
1) exit 1 ;;
esac
echo "fuzz.sh: $target: load-only failures twice in a row; not counted as a failure (no failing input was found)"
exit 0
