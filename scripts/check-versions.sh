#!/usr/bin/env bash
# One Kubernetes version for the whole course, and the release before it
# beside it (issue #30): versions.env names both once, and this check fails
# when any tracked file names another patch release of the course's minor
# (1.37.N), or names the release before anywhere but where it belongs. Of
# the release before only its pin (PREVIOUS_KUBERNETES_VERSION, and the
# k8s.io/* modules' 0.N of it) is allowed, and only in versions.env, in
# cluster/previous/ (its go.mod builds labcluster-1.N), in a golden of the
# previous release (a file under testdata/ with a path part named
# "previous" or "1.N": testdata/script/x.previous.txtar, or a member so
# named in a .txtar: -- want-1.36.txt --), and in Markdown
# sections headed "What changed..." (where a lab says what 1.37 changed),
# "Since when..." (its table of which release brought what) or "The
# previous release..." (the docs on running it); and anywhere as a citation
# of its pinned source (k8s.io/apiserver@v0.N.M/PATH, a blob/v1.N.M/ link),
# which a test asserting the previous release's behaviour names; any other
# 1.36.N fails everywhere: in a README, a script, a link, a golden, a go.mod.
# It also fails when the Go modules disagree with versions.env.
# scripts/test.sh runs it.
#
#   scripts/check-versions.sh [DIR]    check the checkout at DIR (default: this one)
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
# shellcheck source=../versions.env
source versions.env

want=${KUBERNETES_VERSION#v}          # 1.37.0
minor=${want%.*}                      # 1.37
staging="0.${want#1.}"                # 0.37.0
prevn=$(( ${minor#1.} - 1 ))          # 36
prev="1.$prevn"                       # 1.36
prevwant=${PREVIOUS_KUBERNETES_VERSION:-}
prevwant=${prevwant#v}                # 1.36.N, its pin
prevstaging="0.${prevwant#1.}"        # 0.36.N
bad=0

# whatchanged FILE LINE: true when LINE of the Markdown FILE is inside a
# section whose heading starts with "What changed", "Since when" or "The
# previous release" (docs/cluster.md's and docs/kind.md's sections on
# running it), up to the next heading of the same or a higher level.
declare -A sections
whatchanged() {
  local file=$1 line=$2
  if [[ -z ${sections[$file]+x} ]]; then
    sections[$file]=$(awk '
      /^```/ { fence = !fence }
      !fence && /^#+ / {
        n = index($0, " ") - 1
        if (inside && n <= level) inside = 0
        if (!inside && substr($0, n + 2) ~ /^(What changed|Since when|The previous release)/) { inside = 1; level = n }
      }
      inside { printf "%d ", NR }' "$file")
  fi
  [[ " ${sections[$file]} " == *" $line "* ]]
}

# prevgolden FILE LINE: true when LINE of FILE is a golden of the previous
# release: FILE is under testdata/ and a part of its path is named
# "previous" or "1.N" (testdata/script/x.previous.txtar), or FILE is a
# .txtar archive and LINE is in a member so named (-- want-1.36.txt --:
# labkit's `release` command picks a golden by $RELEASE).
declare -A members
prevgolden() {
  local file=$1 line=$2 re="(^|/|[._-])(previous|v?${prev//./[.]})([._/-]|\$)"
  [[ $file == testdata/* || $file == */testdata/* ]] || return 1
  [[ $file =~ $re ]] && return 0
  [[ $file == *.txtar ]] || return 1
  if [[ -z ${members[$file]+x} ]]; then
    members[$file]=$(awk -v re="$re" '
      /^-- .* --$/ { name = substr($0, 4, length($0) - 6); inside = (name ~ re); next }
      inside { printf "%d ", NR }' "$file")
  fi
  [[ " ${members[$file]} " == *" $line "* ]]
}

# Any other patch of this minor release, as a Kubernetes (1.36.N) or a
# staging-module (0.36.N) version, in any tracked text file but go.sum and
# go.work.sum (which list checksums of every version a build ever resolved).
# (Not \b: in a version written "v0.N.M", the v and the 0 are both word
# characters, with no word boundary between them.)
pattern="(^|[^0-9.])(${minor//./\\.}|0\\.${minor#1.}|${prev//./\\.}|0\\.$prevn)\\.[0-9]+"
while IFS= read -r hit; do
  file=${hit%%:*}
  # In a go.mod, only Kubernetes' modules count (google.golang.org/protobuf
  # has versions 1.36.N too, and they are not Kubernetes').
  if [[ $file == go.mod || $file == */go.mod ]] && [[ $hit != *k8s.io/* ]]; then
    continue
  fi
  # cri-tools numbers its releases after Kubernetes' minor ones, from its
  # own first release of each (kind's base image builds one): not a Kubernetes patch.
  if [[ $hit == *sigs.k8s.io/cri-tools\ v* ]]; then
    continue
  fi
  # kindnode/containerd builds containerd at the version kind's base image
  # builds, with the Kubernetes libraries containerd's own go.mod takes
  # (1.36's): k8s.io/cri-api at 1.37 renamed the CRI's Signal values that
  # containerd uses (Signal_RUNTIME_DEFAULT), so it does not build with them.
  # cluster/kindpath's TestKindNodeModulesPinWhatTheyClaim checks that they
  # are containerd's own.
  if [[ $file == kindnode/containerd/go.mod ]]; then
    continue
  fi
  # konnectivity-client (apiserver-network-proxy) numbers its releases
  # after Kubernetes' minor ones too: its v0.N.M are its own, not Kubernetes'.
  if [[ $hit == *sigs.k8s.io/apiserver-network-proxy/konnectivity-client\ v* ]]; then
    continue
  fi
  # The first version on the line that is neither pin: bash's own regexp
  # match, left to right, with no process per hit (a checkout has a
  # thousand hits, nearly all the pinned version).
  found="" rest=${hit#*:*:}
  # A citation of the previous release at its pin (k8s.io/apiserver@v0.36.4/…,
  # k8s.io/kubernetes@v1.36.4/…, a …/blob/v1.36.4/… link) may stand in any
  # file: a test that asserts what the previous release does cites its
  # lines there, and scripts/check-links.sh checks the lines.
  if [[ -n $prevwant ]]; then
    rest=${rest//@v$prevstaging\//@PREV/}
    rest=${rest//@v$prevwant\//@PREV/}
    rest=${rest//\/blob\/v$prevwant\//\/blob\/PREV/}
    rest=${rest//\/tree\/v$prevwant\//\/tree\/PREV/}
  fi
  while [[ $rest =~ $pattern ]]; do
    match=${BASH_REMATCH[0]}
    rest=${rest#*"$match"}
    version=${match#[!0-9]}
    if [[ $version != "$want" && $version != "$staging" ]]; then
      # The release before, at its pin only: in versions.env, in the files
      # of the previous release (cluster/previous/, a golden of its own),
      # and where a lab says what changed since, or since when.
      if [[ -n $prevwant ]] && [[ $version == "$prevwant" || $version == "$prevstaging" ]] &&
        { [[ $file == versions.env || $file == cluster/previous/* ]] ||
          prevgolden "$file" "$(cut -d: -f2 <<<"$hit")" ||
          { [[ $file == *.md ]] && whatchanged "$file" "$(cut -d: -f2 <<<"$hit")"; }; }; then
        continue
      fi
      found=$version
      break
    fi
  done
  if [[ -n $found ]]; then
    if [[ -n $prevwant && ( $found == "$prevwant" || $found == "$prevstaging" ) ]]; then
      echo "check-versions: $file:$(cut -d: -f2 <<<"$hit"): names $found, the previous release, outside versions.env, cluster/previous/, the previous release's goldens (under testdata/, a path part named previous or $prev), Markdown sections headed \"What changed...\", \"Since when...\" or \"The previous release...\", and citations of its pinned source (MODULE@v$prevstaging/PATH, blob/v$prevwant/PATH); the course pins $KUBERNETES_VERSION (versions.env)"
    elif [[ $found == "$prev".* || $found == "0.$prevn".* ]]; then
      echo "check-versions: $file:$(cut -d: -f2 <<<"$hit"): names $found, but the course pins $KUBERNETES_VERSION, and ${PREVIOUS_KUBERNETES_VERSION:-no release} as the previous release (versions.env)"
    else
      echo "check-versions: $file:$(cut -d: -f2 <<<"$hit"): names $found, but the course pins $KUBERNETES_VERSION (versions.env)"
    fi
    bad=1
  fi
done < <(git ls-files -z | grep -zvE '(^|/)go(\.work)?\.sum$' | xargs -0 grep -HnIE "$pattern" 2>/dev/null)

# The Go modules must build the version versions.env names.
k8s=$(grep -oE 'k8s\.io/kubernetes v[0-9][^[:space:]]*' cluster/go.mod | head -1 | cut -d' ' -f2)
if [[ $k8s != "$KUBERNETES_VERSION" ]]; then
  echo "check-versions: cluster/go.mod requires k8s.io/kubernetes $k8s, versions.env says $KUBERNETES_VERSION"
  bad=1
fi
# kind's image must be the same release, pinned by digest.
if [[ $KIND_NODE_IMAGE != "kindest/node:$KUBERNETES_VERSION@sha256:"* ]]; then
  echo "check-versions: KIND_NODE_IMAGE=$KIND_NODE_IMAGE is not kindest/node:$KUBERNETES_VERSION pinned by @sha256 digest"
  bad=1
fi

# The previous release: the minor before, built by cluster/previous/go.mod,
# kind's image of it by digest.
if [[ -z ${PREVIOUS_KUBERNETES_VERSION:-} ]]; then
  echo "check-versions: versions.env names no PREVIOUS_KUBERNETES_VERSION (the release before $KUBERNETES_VERSION, v$prev.N)"
  bad=1
else
  if [[ $prevwant != "$prev".* ]]; then
    echo "check-versions: PREVIOUS_KUBERNETES_VERSION=$PREVIOUS_KUBERNETES_VERSION is not a patch of $prev, the release before $KUBERNETES_VERSION"
    bad=1
  fi
  pk8s=$(grep -oE 'k8s\.io/kubernetes v[0-9][^[:space:]]*' cluster/previous/go.mod 2>/dev/null | head -1 | cut -d' ' -f2)
  if [[ $pk8s != "$PREVIOUS_KUBERNETES_VERSION" ]]; then
    echo "check-versions: cluster/previous/go.mod requires k8s.io/kubernetes ${pk8s:-nothing}, versions.env says PREVIOUS_KUBERNETES_VERSION=$PREVIOUS_KUBERNETES_VERSION"
    bad=1
  fi
  petcd=$(grep -oE 'go\.etcd\.io/etcd/server/v3 v[0-9][^[:space:]]*' cluster/previous/go.mod 2>/dev/null | head -1 | cut -d' ' -f2)
  if [[ $petcd != "${PREVIOUS_ETCD_VERSION:-}" ]]; then
    echo "check-versions: cluster/previous/go.mod requires go.etcd.io/etcd/server/v3 ${petcd:-nothing}, versions.env says PREVIOUS_ETCD_VERSION=${PREVIOUS_ETCD_VERSION:-}"
    bad=1
  fi
  if [[ ${PREVIOUS_KIND_NODE_IMAGE:-} != "kindest/node:$PREVIOUS_KUBERNETES_VERSION@sha256:"* ]]; then
    echo "check-versions: PREVIOUS_KIND_NODE_IMAGE=${PREVIOUS_KIND_NODE_IMAGE:-} is not kindest/node:$PREVIOUS_KUBERNETES_VERSION pinned by @sha256 digest"
    bad=1
  fi
fi

if [[ $bad == 0 ]]; then
  echo "check-versions: every file names Kubernetes $KUBERNETES_VERSION (k8s.io/* v$staging) and kind's image by digest, and the previous release $PREVIOUS_KUBERNETES_VERSION only where it belongs"
fi
exit $bad
