#!/usr/bin/env bash
# Every upstream reference must point at a real file of the pinned release.
# This check finds, in every tracked README, Markdown file, Go file and
# exercise, each
#   - module path:  k8s.io/MODULE@vX.Y.Z/PATH
#   - pinned link:  https://github.com/kubernetes/REPO/(blob|tree)/vX.Y.Z/PATH[#Lnn]
# and fails unless PATH exists in that module at that version (in the Go
# module cache, downloaded if missing), and a #Lnn anchor is within the file.
# A renamed or invented file (watch_encoder.go, say) fails CI.
#
#   scripts/check-links.sh [DIR]    check the checkout at DIR (default: this one)
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
modcache=$(go env GOMODCACHE)
bad=0 checked=0

# moddir MODULE VERSION: the module's directory in the cache, downloading it
# the first time.
moddir() {
  local dir="$modcache/$1@$2"
  if [[ ! -d $dir ]]; then
    (cd "$(mktemp -d)" && GOWORK=off GOFLAGS=-mod=mod go mod download "$1@$2" >/dev/null 2>&1)
  fi
  [[ -d $dir ]] && echo "$dir"
}

check() { # FILE:LINE MODULE VERSION PATH ANCHOR
  local where=$1 module=$2 version=$3 path=$4 anchor=$5 dir
  checked=$((checked + 1))
  if ! dir=$(moddir "$module" "$version"); then
    echo "check-links: $where: $module@$version is not a module version the Go proxy has"
    bad=1
    return
  fi
  path=${path%/}
  if [[ ! -e $dir/$path && $path =~ ^(.*)\.([A-Z][A-Za-z0-9_]*)$ ]]; then
    # PACKAGE.Symbol (tools/cache.NewSharedIndexInformer): the package must
    # exist and declare the symbol.
    local pkg=${BASH_REMATCH[1]} sym=${BASH_REMATCH[2]}
    if [[ ! -d $dir/$pkg ]]; then
      echo "check-links: $where: $module@$version has no package $pkg"
      bad=1
    elif ! grep -qE "^(func( \([^)]*\))?|type|var|const) $sym\b|^[[:space:]]+$sym[[:space:]]*(=|[A-Za-z*])" "$dir/$pkg"/*.go 2>/dev/null; then
      echo "check-links: $where: $module@$version/$pkg declares no $sym"
      bad=1
    fi
    return
  fi
  if [[ ! -e $dir/$path ]]; then
    echo "check-links: $where: $module@$version has no $path"
    bad=1
    return
  fi
  if [[ $anchor =~ ^L([0-9]+) ]]; then
    local want=${BASH_REMATCH[1]} lines
    lines=$(wc -l <"$dir/$path")
    if ((want > lines)); then
      echo "check-links: $where: $module@$version/$path has $lines lines, not $want"
      bad=1
    fi
  fi
}

refs='k8s\.io/[a-z0-9-]+@v[0-9]+\.[0-9]+\.[0-9]+/[A-Za-z0-9_./-]*|github\.com/kubernetes/[a-z0-9-]+/(blob|tree)/v[0-9]+\.[0-9]+\.[0-9]+/[A-Za-z0-9_./-]*(#L[0-9]+)?'
while IFS= read -r hit; do
  where=$(cut -d: -f1,2 <<<"$hit")
  ref=$(cut -d: -f3- <<<"$hit")
  ref=${ref%.}   # a sentence's full stop
  anchor=""
  [[ $ref == *#* ]] && anchor=${ref#*#} && ref=${ref%%#*}
  if [[ $ref =~ ^k8s\.io/([a-z0-9-]+)@(v[^/]+)/(.*)$ ]]; then
    check "$where" "k8s.io/${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "$anchor"
  elif [[ $ref =~ ^github\.com/kubernetes/kubernetes/(blob|tree)/(v[^/]+)/staging/src/k8s\.io/([a-z0-9-]+)/(.*)$ ]]; then
    # Staging code is published as the k8s.io/* modules, tagged v0.N.M for
    # Kubernetes v1.N.M.
    v=${BASH_REMATCH[2]}
    check "$where" "k8s.io/${BASH_REMATCH[3]}" "v0.${v#v1.}" "${BASH_REMATCH[4]}" "$anchor"
  elif [[ $ref =~ ^github\.com/kubernetes/kubernetes/(blob|tree)/(v[^/]+)/(.*)$ ]]; then
    check "$where" "k8s.io/kubernetes" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "$anchor"
  elif [[ $ref =~ ^github\.com/kubernetes/([a-z0-9-]+)/(blob|tree)/(v[^/]+)/(.*)$ ]]; then
    check "$where" "k8s.io/${BASH_REMATCH[1]}" "${BASH_REMATCH[3]}" "${BASH_REMATCH[4]}" "$anchor"
  fi
done < <(git ls-files -z -- '*.md' '*.go' '*.txtar' '*.sh' | xargs -0 grep -HnoE "$refs" 2>/dev/null)

if [[ $bad == 0 ]]; then
  echo "check-links: all $checked upstream references name files that exist at their pinned version"
fi
exit $bad
