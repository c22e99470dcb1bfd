#!/usr/bin/env bash
# scripts/kind-node-image.sh: build the kind node image
# listwatch-labs/kind-node:KUBERNETES_VERSION (v1.37.0) here, from the
# course's pinned sources, with no container registry: for machines that
# cannot pull kind's published image (the course's own CI sandbox). A
# learner with Docker and internet does not need it: scripts/cluster-up.sh
# kind uses kind's image, KIND_NODE_IMAGE in versions.env.
# KIND_NODE_IMAGE=listwatch-labs/kind-node:v1.37.0 selects this one, and
# scripts/cluster-up.sh then starts it with testdata/kind-config-sandbox.yaml.
#
# What it needs, checked before anything is compiled: a Docker engine,
# root (mmdebstrap --mode=root and chroot), mmdebstrap, jq, and gcc with a
# static C library (pause.c). On Debian: apt-get install mmdebstrap jq gcc
# libc6-dev. The first build compiles Kubernetes, etcd, CoreDNS and
# containerd: 39 minutes on the course's 2-core sandbox (measured at
# Kubernetes 1.36, with other tests running); each `go build` prints its
# progress every 200 packages.
#
# What goes in, each from a pinned source:
#   - a Debian bookworm root file system with systemd and the node's tools
#     (mmdebstrap, from Debian's packages), runc and the CNI plugins among
#     them (Debian's);
#   - kind's base-image files (entrypoint, systemd units, containerd's
#     config) from the sigs.k8s.io/kind module at KIND_VERSION, as kind's
#     own base image copies them (images/base/Dockerfile there);
#   - containerd, ctr and the runc shim, and crictl, built from their Go
#     modules (kindnode/containerd, kindnode/crictl);
#   - kubelet, kubeadm and kubectl, built from k8s.io/kubernetes at
#     KUBERNETES_VERSION (kindnode/kube);
#   - the images `kubeadm config images list` names, built here and
#     preloaded into the node's containerd under exactly those names:
#     kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy
#     (kindnode/kube), etcd (kindnode/etcd), coredns (kindnode/coredns) and
#     pause (pause.c from the k8s.io/kubernetes module, compiled static).
# Different from kind's image (sigs.k8s.io/kind@v0.33.0/images/base/Dockerfile):
# runc and the CNI plugins are Debian bookworm's packages (runc 1.1.5,
# plugins 1.1.1), where kind builds runc v1.4.3 and plugins v1.9.1 from
# source on Debian trixie. Left out: kindnetd and local-path-provisioner
# (the sandbox's kind config turns the default CNI off, and this image
# brings its own; with no storage manifest kind installs a plain
# StorageClass), fuse-overlayfs (kind's entrypoint picks it on fuse hosts,
# for rootless where overlayfs will not do, or when asked), nfs-common and
# open-iscsi, STOPSIGNAL SIGRTMIN+3 (Debian's docker 20.10 refuses it in
# import and commit; kind removes its nodes with docker rm -f and never
# stops them, but a `docker stop` of this node waits out Docker's timeout),
# the io.cri-containerd.pinned label on the preloaded images, and the
# multi-architecture build.
#
# The image is labelled with a hash of its inputs (this script without its
# comment lines, versions.env, the release, kindnode/*/go.{mod,sum} and
# kindnode/*/previous/go.{mod,sum}); when an image with
# that label exists, the script says so and stops: a second run takes
# seconds.
#
#   scripts/kind-node-image.sh                      the course's release:
#                                                   listwatch-labs/kind-node:KUBERNETES_VERSION
#   scripts/kind-node-image.sh --release previous   the release before it:
#                                                   listwatch-labs/kind-node:PREVIOUS_KUBERNETES_VERSION
#
# The previous release's image is built from the same modules with
# alternate module files, as scripts/build-labcluster.sh --release previous
# builds labcluster: kindnode/kube, kindnode/etcd and kindnode/coredns have
# a previous/go.mod (with its go.sum) pinning what kubeadm of that release
# asks for, used with go build -modfile=previous/go.mod. containerd and
# crictl come from kind's base image, the same for both releases (kind
# KIND_VERSION), so both images take them from the one module each.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=release.sh
source "$root/scripts/release.sh"
release_from_args "scripts/kind-node-image.sh [--release current|previous]" "$@"
# shellcheck source=../versions.env
source "$root/versions.env"
work="$root/.cluster/kind-node"
case "$release" in
current)
  bin="$work/bin"
  modfile=go.mod
  ;;
previous)
  KUBERNETES_VERSION=$PREVIOUS_KUBERNETES_VERSION
  bin="$work/bin-$KUBERNETES_VERSION"
  modfile=previous/go.mod
  ;;
*) echo "kind-node-image: unknown release \"$release\" (current or previous)" >&2; exit 2 ;;
esac
# The module file of each module for this release: kube, etcd and coredns
# have one per release; containerd and crictl one for both.
modfile_of() {
  if [[ -f "$root/kindnode/$1/$modfile" ]]; then echo "$modfile"; else echo go.mod; fi
}
image="listwatch-labs/kind-node:$KUBERNETES_VERSION"
mkdir -p "$bin"
start=$(date +%s)
say() { echo "kind-node-image: [$(( $(date +%s) - start ))s] $*"; }

command -v docker >/dev/null && docker info >/dev/null 2>&1 || {
  echo "kind-node-image: no Docker engine answers (docker info failed); start one first (on the course's sandbox: scripts/sandbox-docker.sh)" >&2
  exit 1
}

inputs=$(cat <(grep -v '^[[:space:]]*#' "$0") "$root/versions.env" <(echo "release $release") \
  "$root"/kindnode/*/go.mod "$root"/kindnode/*/go.sum "$root"/kindnode/*/previous/go.mod "$root"/kindnode/*/previous/go.sum | sha256sum | cut -c1-16)
if [[ "$(docker image inspect "$image" --format '{{index .Config.Labels "listwatch-labs.inputs"}}' 2>/dev/null)" == "$inputs" ]]; then
  say "$image is up to date (inputs $inputs)"
  exit 0
fi

# Everything a build needs, checked now, not after half an hour of
# compiling: mmdebstrap and chroot need root, jq edits containerd's OCI
# spec, gcc compiles pause.c static (which needs libc.a: libc6-dev).
missing=() packages=()
[[ $(id -u) == 0 ]] || missing+=("root (mmdebstrap --mode=root and chroot)")
command -v mmdebstrap >/dev/null || { missing+=(mmdebstrap); packages+=(mmdebstrap); }
command -v jq >/dev/null || { missing+=(jq); packages+=(jq); }
if ! command -v gcc >/dev/null; then
  missing+=(gcc); packages+=(gcc libc6-dev)
elif ! gcc -static -x c -o /dev/null - <<<'int main(void) { return 0; }' >/dev/null 2>&1; then
  missing+=("a static C library for gcc -static"); packages+=(libc6-dev)
fi
if ((${#missing[@]})); then
  printf -v list '%s, ' "${missing[@]}"
  echo "kind-node-image: needs ${list%, }${packages[*]:+ (Debian: apt-get install ${packages[*]})}; nothing was built" >&2
  exit 1
fi
say "building $image (inputs $inputs); the first build compiles Kubernetes, etcd, CoreDNS and containerd: 17 to 40 minutes on 2 cores, depending on how much of it the Go build cache holds"

modcache=$(go env GOMODCACHE)
kube_src="$modcache/k8s.io/kubernetes@$KUBERNETES_VERSION"
kind_files="$modcache/sigs.k8s.io/kind@$KIND_VERSION/images/base/files"
(cd "$root/kindnode/kube" && GOWORK=off go mod download -modfile="$(modfile_of kube)" k8s.io/kubernetes sigs.k8s.io/kind 2>/dev/null || true)
[[ -d "$kind_files" ]] || (cd "$root/cluster" && GOWORK=off go mod download sigs.k8s.io/kind)

# 1. The programs. Versions are stamped as Kubernetes' own build does
# (hack/lib/version.sh sets these variables), so kubeadm and the kubelet
# report KUBERNETES_VERSION.
v=${KUBERNETES_VERSION#v}
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=${v%%.*} -X $p.gitMinor=$(cut -d. -f2 <<<"$v") -X $p.gitTreeState=clean"
done
build() { # module, output name, package, [tags], [more ldflags]
  local mod=$1 out=$2 pkg=$3 tags=${4:-} ldflags="$ldflags ${5:-}" stamp mf
  mf=$(modfile_of "$mod")
  stamp=$(cat "$root/kindnode/$mod/$mf" "$root/kindnode/$mod/${mf%.mod}.sum" <(echo "$pkg $tags $ldflags") | sha256sum | cut -c1-16)
  if [[ -x "$bin/$out" && "$(cat "$bin/$out.stamp" 2>/dev/null)" == "$stamp" ]]; then
    return
  fi
  say "go build $pkg"
  # -v names each package as it is compiled (cached ones are skipped): the
  # progress meter, as in scripts/build-labcluster.sh. The link after the
  # main package prints nothing for a minute or so.
  (
    cd "$root/kindnode/$mod"
    export GOWORK=off CGO_ENABLED=0
    total=$(go list -modfile="$mf" -tags "$tags" -deps "$pkg" | wc -l)
    go build -modfile="$mf" -v -tags "$tags" -ldflags "$ldflags" -o "$bin/$out" "$pkg" 2>&1 | {
      n=0
      while IFS= read -r line; do
        case "$line" in
          "$pkg") say "  compiled $((n + 1)) packages; linking $out" ;;
          *" "* | *:* | "#"*) echo "$line" >&2 ;; # a compiler message
          *) n=$((n + 1))
             if ((n % 200 == 0)); then say "  compiled $n packages (of at most $total)"; fi ;;
        esac
      done
    }
  )
  echo "$stamp" >"$bin/$out.stamp"
}
for c in kubelet kubeadm kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
  build kube "$c" "k8s.io/kubernetes/cmd/$c"
done
build etcd etcd go.etcd.io/etcd/server/v3
build coredns coredns github.com/coredns/coredns
# crictl and containerd stamp their versions from git in their Makefiles
# (cri-tools: pkg/version.Version without the "v"; containerd:
# version.Version); here the version comes from the module's go.mod.
modversion() { (cd "$root/kindnode/$1" && GOWORK=off go list -modfile="$(modfile_of "$1")" -m -f '{{.Version}}' "$2"); }
crictl_version=$(modversion crictl sigs.k8s.io/cri-tools)
build crictl crictl sigs.k8s.io/cri-tools/cmd/crictl "" "-X sigs.k8s.io/cri-tools/pkg/version.Version=${crictl_version#v}"
containerd_version=$(modversion containerd github.com/containerd/containerd/v2)
for c in containerd ctr containerd-shim-runc-v2; do
  build containerd "$c" "github.com/containerd/containerd/v2/cmd/$c" "no_btrfs no_devmapper no_zfs no_aufs" "-X github.com/containerd/containerd/v2/version.Version=$containerd_version"
done
pause_version=$("$bin/kubeadm" config images list --kubernetes-version "$KUBERNETES_VERSION" | sed -n 's#.*/pause:##p')
if [[ ! -x "$bin/pause" ]]; then
  say "gcc pause.c (pause $pause_version)"
  gcc -Os -static -DVERSION="v$pause_version" -o "$bin/pause" "$kube_src/build/pause/linux/pause.c"
fi

# 2. The images kubeadm asks for, each a root file system imported under
# the name kubeadm gives it. The control plane's programs are static: the
# image holds the one file. kube-proxy also needs iptables and conntrack:
# its image is a small Debian.
mapfile -t wanted < <("$bin/kubeadm" config images list --kubernetes-version "$KUBERNETES_VERSION")
say "kubeadm wants: ${wanted[*]}"
images_tar="$work/images.tar"
# Every image this script makes carries this label, so that the ones it no
# longer names can be found and removed (and nothing else).
built_by=listwatch-labs.built-by=kind-node-image
rm -f "$images_tar"
one_file_image() { # name, file, entrypoint path
  local name=$1 file=$2 path=$3 dir
  dir=$(mktemp -d)
  install -D -m 0755 "$bin/$file" "$dir$path"
  mkdir -p "$dir/tmp" "$dir/etc"
  tar -C "$dir" -c . | docker import --change "ENTRYPOINT [\"$path\"]" --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change "LABEL $built_by" - "$name" >/dev/null
  rm -rf "$dir"
}
proxy_packages=iptables,ipset,conntrack,kmod
proxy_rootfs="$work/proxy-rootfs-$(sha256sum <<<"$proxy_packages" | cut -c1-12).tar"
if [[ ! -f "$proxy_rootfs" ]]; then
  say "mmdebstrap: kube-proxy's root file system"
  mmdebstrap --mode=root --format=tar --variant=minbase --include="$proxy_packages" bookworm "$proxy_rootfs.tmp" http://deb.debian.org/debian >"$work/mmdebstrap-proxy.log" 2>&1
  mv "$proxy_rootfs.tmp" "$proxy_rootfs"
fi
for name in "${wanted[@]}"; do
  case "$name" in
    */kube-proxy:*)
      dir=$(mktemp -d)
      tar -C "$dir" -xf "$proxy_rootfs"
      install -m 0755 "$bin/kube-proxy" "$dir/usr/local/bin/kube-proxy"
      tar -C "$dir" -c . | docker import --change 'ENTRYPOINT ["/usr/local/bin/kube-proxy"]' --change "LABEL $built_by" - "$name" >/dev/null
      rm -rf "$dir" ;;
    */kube-apiserver:* | */kube-controller-manager:* | */kube-scheduler:*)
      c=${name##*/}; c=${c%%:*}
      one_file_image "$name" "$c" "/usr/local/bin/$c" ;;
    */etcd:*) one_file_image "$name" etcd /usr/local/bin/etcd ;;
    */coredns:*) one_file_image "$name" coredns /coredns ;;
    */pause:*) one_file_image "$name" pause /pause ;;
    *) echo "kind-node-image: kubeadm wants $name, which this script does not know how to build" >&2; exit 1 ;;
  esac
  say "image $name"
done
docker save -o "$images_tar" "${wanted[@]}"
# They live on in the node's containerd; the engine's copies would only
# shadow the registry's images of the same names.
docker rmi "${wanted[@]}" >/dev/null

# 3. The node's root file system: Debian with systemd, then kind's base
# files and the programs above, as kind's base image Dockerfile arranges
# them.
# The tar is kept, named by its package list: a later build reuses it.
node_packages=systemd,systemd-sysv,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,bash,ca-certificates,curl,jq,procps,e2fsprogs,runc,containernetworking-plugins,socat
node_rootfs="$work/node-rootfs-$(sha256sum <<<"$node_packages" | cut -c1-12).tar"
if [[ ! -f "$node_rootfs" ]]; then
  say "mmdebstrap: the node's root file system (Debian bookworm, systemd)"
  mmdebstrap --mode=root --format=tar --variant=minbase --include="$node_packages" \
    bookworm "$node_rootfs.tmp" http://deb.debian.org/debian >"$work/mmdebstrap-node.log" 2>&1
  mv "$node_rootfs.tmp" "$node_rootfs"
fi
say "assembling the node"
node=$(mktemp -d)
trap 'rm -rf "$node"' EXIT
tar -C "$node" -xf "$node_rootfs"
install -m 0755 "$kind_files"/usr/local/bin/* "$node/usr/local/bin/"
mkdir -p "$node/kind/bin" "$node/etc/containerd" "$node/etc/systemd/system/kubelet.service.d" "$node/etc/kubernetes/manifests" "$node/opt/cni/bin"
install -m 0755 "$kind_files"/kind/bin/* "$node/kind/bin/"
install -m 0644 "$kind_files"/etc/crictl.yaml "$node/etc/"
install -m 0644 "$kind_files"/etc/containerd/config.toml "$node/etc/containerd/"
install -m 0644 "$kind_files"/etc/default/kubelet "$node/etc/default/"
install -m 0644 "$kind_files"/etc/sysctl.d/* "$node/etc/sysctl.d/"
install -m 0644 "$kind_files"/etc/systemd/system/*.service "$kind_files"/etc/systemd/system/*.slice "$node/etc/systemd/system/"
install -m 0644 "$kind_files"/etc/systemd/system/kubelet.service.d/* "$node/etc/systemd/system/kubelet.service.d/"
# kubeadm's pause, not kind's default one: the one image preloaded.
sed -i "s#sandbox_image = \".*\"#sandbox_image = \"registry.k8s.io/pause:$pause_version\"#" "$node/etc/containerd/config.toml"
# The sandbox's VM grants no CAP_SYS_RESOURCE (scripts/sandbox-docker.sh),
# which lowering a process's oom_score_adj needs. containerd gives every
# Pod's sandbox -998 (`defaultSandboxOOMAdj`,
# github.com/containerd/containerd/v2@v2.3.4/internal/cri/server/podsandbox/helpers_linux.go:48),
# and the kubelet asks -997 for Guaranteed and critical containers
# (`guaranteedOOMScoreAdj` k8s.io/kubernetes@v1.37.0/pkg/kubelet/qos/policy.go:35):
# runc in the node then fails to start every Pod ("can't get final child's PID from pipe:
# EOF"). With restrict_oom_score_adj, containerd raises such scores to its
# own, as kind's entrypoint has it do under user namespaces. Elsewhere it
# costs only that: the kubelet's scores are not lowered below containerd's.
sed -i "s#restrict_oom_score_adj = false#restrict_oom_score_adj = true#" "$node/etc/containerd/config.toml"
grep -q "restrict_oom_score_adj = true" "$node/etc/containerd/config.toml" || { echo "kind-node-image: kind's containerd config no longer has restrict_oom_score_adj" >&2; exit 1; }
for c in containerd ctr containerd-shim-runc-v2 crictl; do install -m 0755 "$bin/$c" "$node/usr/local/bin/"; done
for c in kubelet kubeadm kubectl; do install -m 0755 "$bin/$c" "$node/usr/bin/"; done
ln -sf /usr/sbin/runc "$node/usr/local/sbin/runc"
for p in host-local loopback ptp portmap bridge; do ln -sf "/usr/lib/cni/$p" "$node/opt/cni/bin/$p"; done
"$bin/ctr" oci spec | jq '.hooks.createContainer[.hooks.createContainer|length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' | jq 'del(.process.rlimits)' >"$node/etc/containerd/cri-base.json"
echo "$KUBERNETES_VERSION" >"$node/kind/version"
# The CNI config the sandbox's kind config relies on (it turns kindnetd
# off): each Pod gets a veth pair to the node (ptp) and an address from
# kind's default Pod subnet (host-local); portmap for hostPorts. One node only.
mkdir -p "$node/etc/cni/net.d"
cat >"$node/etc/cni/net.d/10-listwatch-labs.conflist" <<'EOF'
{
  "cniVersion": "1.0.0",
  "name": "listwatch-labs",
  "plugins": [
    {"type": "ptp", "ipMasq": true, "mtu": 1500,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
# As kind's base image: services it does not want, off; kubelet, containerd
# and undo-mount-hacks on.
find "$node/lib/systemd/system/sysinit.target.wants/" -name "systemd-tmpfiles-setup.service" -delete
rm -f "$node"/lib/systemd/system/multi-user.target.wants/* "$node"/etc/systemd/system/*.wants/* \
  "$node"/lib/systemd/system/local-fs.target.wants/* "$node"/lib/systemd/system/sockets.target.wants/*udev* \
  "$node"/lib/systemd/system/sockets.target.wants/*initctl* "$node"/lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >>"$node/etc/systemd/journald.conf"
ln -sf /usr/lib/systemd/systemd "$node/sbin/init"
chroot "$node" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
chroot "$node" systemctl mask systemd-binfmt.service >/dev/null 2>&1
base="listwatch-labs/kind-node-base:$KUBERNETES_VERSION"
tar -C "$node" -c . | docker import \
  --change 'ENV container=docker' \
  --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' --change "LABEL $built_by" - "$base" >/dev/null

# 4. Preload the images into the node's containerd, as kind's own node
# build does: a container of the image, containerd started in it, `ctr
# images import`, then the container committed as the image.
say "preloading the images into the node's containerd"
cid=$(docker run -d --privileged --entrypoint sleep "$base" infinity)
trap 'rm -rf "$node"; docker rm -f "$cid" >/dev/null 2>&1 || true' EXIT
docker cp "$images_tar" "$cid:/kind/images.tar"
# The tar (600 MB or more) is made afresh by every build and read only here.
rm -f "$images_tar"
docker exec -d "$cid" sh -c 'containerd >/var/log/containerd-build.log 2>&1'
for _ in $(seq 1 60); do docker exec "$cid" ctr version >/dev/null 2>&1 && break; sleep 1; done
docker exec "$cid" ctr --namespace=k8s.io images import --all-platforms --no-unpack --digests /kind/images.tar >/dev/null
# `--digests` also names each image by its digest, as import-DATE@sha256:…;
# only the names kubeadm asks for are kept.
docker exec "$cid" sh -c 'ctr --namespace=k8s.io images ls -q | grep "^import-" | xargs -r ctr --namespace=k8s.io images rm >/dev/null'
docker exec "$cid" ctr --namespace=k8s.io images ls -q | grep -v '^sha256:' | sort | sed 's/^/kind-node-image: preloaded /'
docker exec "$cid" sh -c 'pkill containerd; rm -f /kind/images.tar /var/log/containerd-build.log'
docker commit \
  --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' --change 'CMD []' \
  --change 'ENV container=docker' \
  --change "LABEL listwatch-labs.inputs=$inputs" "$cid" "$image" >/dev/null
docker rm -f "$cid" >/dev/null
docker rmi "$base" >/dev/null
# The image an earlier build tagged is now untagged: remove it, and
# anything else of this script's left untagged, unless a container uses it.
docker image prune -f --filter "label=$built_by" >/dev/null
say "built $image ($(docker image inspect "$image" --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}'))"
