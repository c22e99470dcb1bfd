#!/usr/bin/env bash
# Rewrites each plain upstream citation in the checkout's Markdown files,
#   (`triggerValue`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:555-565)
# as the short link scripts/check-links.sh wants there,
#   (`triggerValue`, [cacher.go:555-565](https://github.com/kubernetes/kubernetes/blob/v1.37.0/staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go#L555-L565))
# leaving code (fenced blocks, code spans, HTML comments) as it is. Go files,
# scripts and exercises keep the plain form. Each link is checked before it is
# written (the file exists in the module version, downloaded if missing, and
# the link reads back as the same citation), and a second run changes
# nothing. The rules in full are in labkit/cmd/linkcite, which does the work.
#
#   scripts/link-citations.sh [-n] [-report] [DIR]
#     -n        change nothing; list each citation it would rewrite
#     -report   list what still needs a hand: a sentence or parenthesis with
#               more than two citations, a citation in a code span
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
flags=()
while [[ $# -gt 0 && $1 == -* ]]; do flags+=("$1"); shift; done
root=$(cd "${1:-$here}" && pwd) || exit 2
# From labkit/, so that it builds with or without the workspace (GOWORK=off).
cd "$here/labkit" && exec go run ./cmd/linkcite "${flags[@]}" "$root"
