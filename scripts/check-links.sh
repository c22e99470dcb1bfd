#!/usr/bin/env bash
# Every upstream citation must say something true about the pinned release.
# This check finds, in every tracked README, Markdown file, Go file, exercise
# and script, each
#   - module path:  k8s.io/MODULE@vX.Y.Z/PATH[:N[-M]]
#                   sigs.k8s.io/MODULE@vX.Y.Z/PATH[:N[-M]] (kind)
#                   go.etcd.io/etcd/MODULE/v3@vX.Y.Z/PATH[:N[-M]]
#   - pinned link:  https://github.com/kubernetes/REPO/(blob|tree)/vX.Y.Z/PATH[#LN[-LM]]
# and fails unless PATH exists in that module at that version (in the Go
# module cache, downloaded if missing), and, for a citation of lines, the
# lines exist and hold the Go identifier its sentence names: the nearest
# backticked identifier before it in its paragraph (for `A.B`, B). A renamed
# or invented file (watch_encoder.go, say) or a line number that drifted
# fails CI. The rules in full are in labkit/cmd/checklinks, which does the work.
#
#   scripts/check-links.sh [DIR]    check the checkout at DIR (default: this one)
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "${1:-$here}" && pwd) || exit 2
# From labkit/, so that it builds with or without the workspace (GOWORK=off).
cd "$here/labkit" && exec go run ./cmd/checklinks "$root"
