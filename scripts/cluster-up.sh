#!/usr/bin/env bash
# Start a cluster for the labs and write .cluster/kubeconfig.
#
#   scripts/cluster-up.sh            the embedded control plane (default; no Docker)
#   scripts/cluster-up.sh --etcd-members 3
#                                    the same, on a three-member etcd (one member can die)
#   scripts/cluster-up.sh kind       a kind cluster (needs a Docker engine)
#   LAB_CLUSTER=kind scripts/cluster-up.sh
#
#   scripts/cluster-up.sh [embedded|kind] --release previous
#   LAB_RELEASE=previous scripts/cluster-up.sh
#                                    the same, of the release before the
#                                    course's (versions.env PREVIOUS_*):
#                                    .cluster/bin/labcluster-1.N, or kind's
#                                    node image of it (docs/cluster.md, docs/kind.md)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${LAB_CLUSTER:-embedded}
asked=${LAB_CLUSTER:+yes} # was a kind of cluster asked for, or is it the default?
if [[ $# -gt 0 && $1 != -* ]]; then
  mode=$1
  asked=yes
  shift
fi
cluster_up_usage="usage: scripts/cluster-up.sh [embedded [--etcd-members 1|3|5] | kind] [--release current|previous]"
if [[ $mode != embedded && $mode != kind ]]; then
  echo "cluster-up: unknown kind of cluster \"$mode\" (embedded or kind)" >&2
  echo "$cluster_up_usage" >&2
  exit 2
fi
# --release (either kind of cluster) is this script's; it is taken out here,
# and what is left goes to labcluster.
release=${LAB_RELEASE:-current}
rest=()
while [[ $# -gt 0 ]]; do
  case "$1" in
  --release=*) release=${1#--release=} ;;
  --release)
    if [[ $# -lt 2 ]]; then
      echo "cluster-up: --release needs current or previous" >&2
      exit 2
    fi
    release=$2
    shift
    ;;
  *) rest+=("$1") ;;
  esac
  shift
done
set -- ${rest[@]+"${rest[@]}"}
if [[ $release != current && $release != previous ]]; then
  echo "cluster-up: unknown release \"$release\" (current, the course's, or previous, the release before)" >&2
  echo "$cluster_up_usage" >&2
  exit 2
fi
# What is left are labcluster's flags (embedded only): --etcd-members N.
# They are checked here, so that a mistyped one is named in this script's
# terms (labcluster, which would read them, is not what the learner typed).
for ((i = 1; i <= $#; i++)); do
  a=${!i}
  case "$a" in
  --etcd-members=* | -etcd-members=*) ;;
  --etcd-members | -etcd-members)
    if ((i == $#)); then
      echo "cluster-up: --etcd-members needs a number: 1, 3 or 5" >&2
      exit 2
    fi
    i=$((i + 1))
    ;;
  *)
    echo "cluster-up: unknown flag or argument \"$a\"; cluster-up.sh takes --etcd-members 1|3|5 (the embedded cluster's etcd members) and --release current|previous" >&2
    echo "$cluster_up_usage" >&2
    exit 2
    ;;
  esac
done
if [[ $# -gt 0 && $mode != embedded ]]; then
  echo "cluster-up: $* is for the embedded cluster, not $mode" >&2
  exit 2
fi
kubeconfig="$root/.cluster/kubeconfig"
mkdir -p "$root/.cluster"
# KIND_NODE_IMAGE and KIND_CONFIG from the environment win over the pinned
# ones: KIND_NODE_IMAGE=listwatch-labs/kind-node:v1.37.0 is the node image
# scripts/kind-node-image.sh builds here; KIND_CONFIG is the kind config.
# That image has no kindnetd and brings a CNI config of its own, so without
# KIND_CONFIG it gets testdata/kind-config-sandbox.yaml (kind's CNI off, and
# the kubelet allowed on cgroup v1), kind's images testdata/kind-config.yaml.
image_override=${KIND_NODE_IMAGE:-}
# shellcheck source=../versions.env
source "$root/versions.env"
version=$KUBERNETES_VERSION
labcluster=$root/.cluster/bin/labcluster
if [[ $release == previous ]]; then
  # The release before: its own labcluster binary (scripts/build-labcluster.sh
  # --release previous), kind's node image of it.
  version=$PREVIOUS_KUBERNETES_VERSION
  previous_minor=${version#v}
  labcluster=$root/.cluster/bin/labcluster-${previous_minor%.*}
  KIND_NODE_IMAGE=$PREVIOUS_KIND_NODE_IMAGE
fi
KIND_NODE_IMAGE=${image_override:-$KIND_NODE_IMAGE}
if [[ -n ${KIND_CONFIG:-} ]]; then
  kind_config=$KIND_CONFIG
elif [[ $KIND_NODE_IMAGE == listwatch-labs/kind-node:* ]]; then
  kind_config=$root/testdata/kind-config-sandbox.yaml
else
  kind_config=$root/testdata/kind-config.yaml
fi

case "$mode" in
embedded)
  if [[ -f "$root/.cluster/kind" ]]; then
    # Plain scripts/cluster-up.sh means "a cluster for the labs": the kind
    # one is that. Only an explicit embedded start, or labcluster's flags,
    # is refused.
    if [[ -z $asked && $# == 0 ]]; then
      echo "cluster-up: the kind cluster (scripts/cluster-up.sh kind) is up; the labs use it"
      echo "export KUBECONFIG=$kubeconfig"
      exit 0
    fi
    echo "cluster-up: a kind cluster is up; for the embedded one, stop kind first with scripts/cluster-down.sh" >&2
    exit 1
  fi
  "$root/scripts/build-labcluster.sh" --release "$release"
  # A cluster of the other release already up: labcluster up says so
  # (state.json records the release its supervisor runs) and starts nothing.
  "$labcluster" up --dir "$root/.cluster" "$@"
  ;;
kind)
  # Ask the engine, not the client: the docker CLI answers even with no daemon.
  if ! docker info >/dev/null 2>&1; then
    echo "cluster-up: kind needs a Docker engine and none answers here (docker info failed); use the embedded cluster instead: scripts/cluster-up.sh" >&2
    exit 1
  fi
  if [[ -f "$root/.cluster/state.json" ]]; then
    echo "cluster-up: the embedded cluster is up; stop it first with scripts/cluster-down.sh" >&2
    exit 1
  fi
  # On a cgroup v1 host the kubelet refuses to start unless its
  # configuration sets failCgroupV1 to false, and kind does not set it. The
  # default is true:
  # `FailCgroupV1` k8s.io/kubernetes@v1.37.0/pkg/kubelet/apis/config/v1beta1/defaults.go:291-293;
  # the refusal:
  # `validateKubeletOSConfiguration` k8s.io/kubernetes@v1.37.0/pkg/kubelet/apis/config/validation/validation_linux.go:33-37. kind then fails after a minute or more
  # with kubeadm's wait-control-plane timeout, and deletes the node whose
  # journal holds the reason. So it is said here, before kind starts.
  if [[ $(docker info --format '{{.CgroupVersion}}' 2>/dev/null) == 1 ]] && ! grep -Eq '^[[:space:]]*failCgroupV1: false' "$kind_config"; then
    echo "cluster-up: this Docker engine's host runs cgroup v1, and the kubelet refuses to start on cgroup v1 unless its configuration says failCgroupV1: false, which $kind_config does not; kind would time out in kubeadm's wait-control-plane step. Use a host with cgroup v2, or set KIND_CONFIG to a kind config that patches the KubeletConfiguration as testdata/kind-config-sandbox.yaml does" >&2
    exit 1
  fi
  kind="$root/.cluster/bin/kind"
  if [[ ! -x "$kind" ]]; then
    echo "cluster-up: installing kind (sigs.k8s.io/kind@$KIND_VERSION) into .cluster/bin"
    GOBIN="$root/.cluster/bin" GOWORK=off go install "sigs.k8s.io/kind@$KIND_VERSION"
  fi
  if "$kind" get clusters 2>/dev/null | grep -qx listwatch-labs; then
    if [[ -f "$root/.cluster/kind" ]]; then
      # The marker names the node image it was started with, on a line
      # "image IMAGE" (none from a checkout before issue #30: taken as
      # the one asked for).
      running=$(sed -n 's/^image //p' "$root/.cluster/kind")
      if [[ ${running:-$KIND_NODE_IMAGE} != "$KIND_NODE_IMAGE" ]]; then
        echo "cluster-up: a kind cluster of $running is up, not of $KIND_NODE_IMAGE ($version); stop it first with scripts/cluster-down.sh" >&2
        exit 1
      fi
      echo "cluster-up: kind: already up"
      echo "export KUBECONFIG=$kubeconfig"
      exit 0
    fi
    echo "cluster-up: a kind cluster named listwatch-labs exists already, not started from this checkout (another checkout's, or left by a start killed outright); if it is yours to remove: $kind delete cluster --name listwatch-labs" >&2
    exit 1
  fi
  # The marker goes down before kind starts, so that a start cut short is
  # one scripts/cluster-down.sh removes. kind has no handler for Ctrl-C: it
  # dies where it is and leaves its node container and network behind, and
  # the next `kind create` would refuse the name. So on Ctrl-C this script
  # removes them itself, ignoring a second Ctrl-C while it does.
  echo "image $KIND_NODE_IMAGE" >"$root/.cluster/kind"
  trap 'trap "" INT TERM
        echo "cluster-up: interrupted; removing the half-made kind cluster" >&2
        "$root/scripts/cluster-down.sh" >&2
        exit 130' INT TERM
  "$kind" create cluster --name listwatch-labs --image "$KIND_NODE_IMAGE" \
    --config "$kind_config" --kubeconfig "$kubeconfig" --wait 120s || {
    status=$?
    # kind removes its nodes when create fails; the marker and the network go too.
    trap "" INT TERM
    "$root/scripts/cluster-down.sh" >&2
    exit $status
  }
  trap - INT TERM
  chmod 600 "$kubeconfig"
  ;;
*) # checked above
  echo "$cluster_up_usage" >&2
  exit 2
  ;;
esac
echo "export KUBECONFIG=$kubeconfig"
