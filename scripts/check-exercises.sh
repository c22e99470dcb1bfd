#!/usr/bin/env bash
# For every exercise of every lab (labs/NN-*/exercises.json): its tests fail
# as shipped in exercise mode (go test -tags exercise), naming the exercise
# and its file; they pass with only its solution written in (go test
# -overlay), and in solution mode. Only the tests that check each exercise
# run, and those that need a cluster only with --cluster.
#
#   scripts/check-exercises.sh                 every lab (about a minute)
#   scripts/check-exercises.sh 05              one lab
#   scripts/check-exercises.sh --full          also: in exercise mode every other test passes, so
#                                              only the exercises' tests fail (runs each package whose
#                                              test binary the tag changes, the exercises' tests
#                                              skipped; a few minutes; uses a cluster, as go test does)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export LABS_ROOT="$root"
cd "$root"
exec go run ./learn verify "$@"
