#!/usr/bin/env bash
# Render every mermaid block of every README.md (and of the pages it moved
# text to: docs/*.md, labs/*/DEEPER.md) to SVG with
# @mermaid-js/mermaid-cli (pinned in tools/mermaid/package.json and its
# package-lock.json), driving Debian's chromium; fail on the first block
# that does not parse. Where the machine has no npm, print one SKIP line and
# succeed.
#
#   scripts/render-diagrams.sh                 every README.md, docs/*.md, labs/*/DEEPER.md
#   scripts/render-diagrams.sh FILE.md ...     only these
#
# SVGs go to $DIAGRAMS_OUT (default .cluster/diagrams, git-ignored), named
# after the README's path: labs-03-watchserver-README-1.svg is its first block.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/tools/mermaid"
out=${DIAGRAMS_OUT:-$root/.cluster/diagrams}

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "render-diagrams: SKIP: no npm/node on this machine; install Node.js 20 or newer to render the mermaid diagrams"
  exit 0
fi
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [[ -z "$chromium" ]]; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "render-diagrams: installing chromium (apt-get install chromium)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null
    chromium=$(command -v chromium)
  else
    echo "render-diagrams: SKIP: no chromium on this machine (Debian: apt-get install chromium; or set CHROMIUM=/path/to/chrome)"
    exit 0
  fi
fi

# The pinned mermaid-cli, installed once per package-lock.json; puppeteer's
# own browser download is skipped: we drive the system's chromium.
stamp="$tools/node_modules/.lock-installed"
installed() { [[ -x "$tools/node_modules/.bin/mmdc" ]] && cmp -s "$tools/package-lock.json" "$stamp"; }
if ! installed; then
  # One install at a time: test.sh's checks lane and learn's diagram test
  # may both get here at once, and two npm ci in one directory break each
  # other. The lock is a directory (mkdir is atomic, on macOS too) holding
  # its owner's PID, so a lock left by a killed run is taken over.
  lock="$tools/.install.lock"
  until mkdir "$lock" 2>/dev/null; do
    owner=$(cat "$lock/pid" 2>/dev/null || true)
    if [[ -n $owner ]] && ! kill -0 "$owner" 2>/dev/null; then
      rm -rf "$lock"
      continue
    fi
    sleep 1
  done
  echo $$ >"$lock/pid"
  trap 'rm -rf "$lock"' EXIT
  if ! installed; then # the lock's last holder may have installed it
    echo "render-diagrams: installing @mermaid-js/mermaid-cli (npm ci in tools/mermaid)"
    (cd "$tools" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    cp "$tools/package-lock.json" "$stamp"
  fi
  rm -rf "$lock"
  trap - EXIT
fi

mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/render-diagrams.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Headless chromium as root needs --no-sandbox; the other flags keep it from
# reaching for the network (closed here: every attempt fails, slowly).
cat >"$work/puppeteer.json" <<JSON
{
  "executablePath": "$chromium",
  "args": ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--user-data-dir=$work/profile"]
}
JSON

if [[ $# -gt 0 ]]; then
  files=("$@")
else
  files=()
  while IFS= read -r f; do files+=("$f"); done < <(cd "$root" && git ls-files -co --exclude-standard -- '*README.md' 'docs/*.md' 'labs/*/DEEPER.md' | sort)
fi
rendered=0
for f in "${files[@]}"; do
  [[ -f "$f" ]] || f="$root/$f"
  grep -q '^```mermaid' "$f" || continue
  rel=$(realpath --relative-to="$root" "$f" 2>/dev/null || echo "$f")
  [[ $rel == ../* || $rel == /* ]] && rel=$(basename "$f") # a file outside the repository: its name
  name=$(echo "${rel%.md}" | tr '/' '-' | tr -c 'A-Za-z0-9_.\n-' '-')
  # mmdc renders each mermaid block of a markdown file to NAME-N.svg.
  if ! log=$("$tools/node_modules/.bin/mmdc" -q -p "$work/puppeteer.json" -i "$f" -o "$out/$name.md" 2>&1); then
    echo "render-diagrams: FAIL: $rel: a mermaid block does not render:" >&2
    echo "$log" | grep -v '^\s*at ' | head -20 >&2
    exit 1
  fi
  n=$(grep -c '^```mermaid' "$f")
  echo "render-diagrams: $rel: $n diagram(s) -> $out/$name-*.svg"
  rendered=$((rendered + n))
done
echo "render-diagrams: ok, $rendered diagram(s) rendered"
