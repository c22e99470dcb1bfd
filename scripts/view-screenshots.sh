#!/usr/bin/env bash
# Regenerate the live view's screenshots in docs/view (docs/view.md shows
# relist.png): it runs the view's browser test (learn/view,
# TestViewInABrowser), which drives chromium through the page's lessons and
# saves a screenshot of each. Needs chromium (Debian: apt-get install
# chromium; or CHROMIUM=/path/to/chrome).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/docs/view"
cd "$root/learn"
LABS_REQUIRE_BROWSER=1 VIEW_SCREENSHOTS="$root/docs/view" go test -v -count=1 -run '^TestViewInABrowser$' ./view | grep -E 'Indexer panel showed|^(ok|FAIL|---)'

ls "$root/docs/view"
