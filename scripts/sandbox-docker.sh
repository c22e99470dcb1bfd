#!/usr/bin/env bash
# scripts/sandbox-docker.sh: start a Docker engine on a machine like the
# course's own CI sandbox, where none runs. NOT for learners: on your own
# machine, install Docker as its documentation says; nothing here is needed
# and scripts/cluster-up.sh never calls this. scripts/kind-e2e.sh does, and
# only when `docker info` does not answer.
#
# What such a machine needs, and why, line by line below:
#   1. Debian's docker.io package (dockerd, containerd, runc), installed
#      without letting its maintainer scripts start the service: the
#      sandbox has no init system to start it under; with it, what
#      scripts/kind-node-image.sh needs besides Docker (mmdebstrap, jq, and
#      gcc with a static C library), so that scripts/kind-e2e.sh runs on a
#      fresh sandbox.
#   2. A wrapper around runc. The VM's capability bounding set lacks
#      CAP_SYS_RESOURCE, so a --privileged container (a kind node is one)
#      asks runc for a capability the kernel will not grant, and runc fails
#      with "unable to apply caps: operation not permitted". The wrapper
#      drops, from the container's OCI config, every capability that is not
#      in this machine's bounding set, and then runs the real runc.
#   3. dockerd, started in the background with that wrapper as its default
#      runtime, its log in .cluster/dockerd.log, in a session of its own
#      (setsid): a Ctrl-C in the terminal that ran this script (or
#      scripts/kind-e2e.sh) goes to that terminal's foreground process group,
#      and dockerd must not be in it. The script waits until `docker info`
#      answers, or says why not.
# The host is cgroup v1; what the kubelet then needs is in
# testdata/kind-config-sandbox.yaml, not here.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$root/.cluster"

if docker info >/dev/null 2>&1; then
  echo "sandbox-docker: a Docker engine answers already"
  exit 0
fi
if [[ $(id -u) != 0 ]]; then
  echo "sandbox-docker: needs root (it installs packages and starts dockerd); on your own machine install Docker instead" >&2
  exit 1
fi

# 1. The packages. policy-rc.d answering 101 tells Debian's maintainer
# scripts not to start services; it is removed again at once.
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v jq >/dev/null || need+=(jq)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v gcc >/dev/null || need+=(gcc)
[[ -f /usr/lib/$(uname -m)-linux-gnu/libc.a ]] || need+=(libc6-dev) # for gcc -static
if ((${#need[@]})); then
  echo "sandbox-docker: installing ${need[*]} from Debian"
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 755 /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  DEBIAN_FRONTEND=noninteractive apt-get -qq update
  DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends "${need[@]}" >/dev/null
  rm -f /usr/sbin/policy-rc.d
  trap - EXIT
fi

# 2. The runc wrapper. runc is called as `runc [global flags] create
# --bundle DIR ... ID`, whose config.json holds the container's capability
# sets, and as `runc [global flags] exec --process FILE ... ID` (docker
# exec), whose FILE holds the process's.
real_runc=$(command -v runc)
command -v capsh >/dev/null || {
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends libcap2-bin >/dev/null
  rm -f /usr/sbin/policy-rc.d
}
# The capabilities this machine's bounding set lacks, by name, found once:
# the bounding set does not change while the machine runs.
bnd=$((16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status)))
missing=()
for n in $(seq 0 40); do
  if (( (bnd >> n & 1) == 0 )); then
    name=$(capsh --decode="$(printf '%x' $((1 << n)))" | sed 's/.*=//' | tr '[:lower:]' '[:upper:]')
    [[ "$name" == CAP_* ]] && missing+=("\"$name\"")
  fi
done
drop="[$(IFS=,; echo "${missing[*]}")]"
echo "sandbox-docker: capabilities this machine's bounding set lacks: $drop"
cat >/usr/local/bin/runc-sandbox <<EOF
#!/usr/bin/env bash
# Written by listwatch-labs' scripts/sandbox-docker.sh: runc, minus the
# capabilities this machine's bounding set lacks ($drop).
spec="" path=""
args=("\$@")
for ((i = 0; i < \${#args[@]}; i++)); do
  case "\${args[i]}" in
    --bundle|-b) spec="\${args[i+1]}/config.json" path=".process.capabilities" ;;
    --bundle=*) spec="\${args[i]#--bundle=}/config.json" path=".process.capabilities" ;;
    --process|-p) spec="\${args[i+1]}" path=".capabilities" ;;
    --process=*) spec="\${args[i]#--process=}" path=".capabilities" ;;
  esac
done
if [[ -n "\$spec" && -f "\$spec" ]]; then
  tmp=\$(mktemp "\$spec.XXXXXX")
  jq --argjson drop '$drop' "if \$path then \$path |= with_entries(.value |= map(select(. as \\\$c | \\\$drop | index(\\\$c) | not))) else . end" "\$spec" >"\$tmp" && mv "\$tmp" "\$spec"
fi
exec $real_runc "\$@"
EOF
chmod 755 /usr/local/bin/runc-sandbox

# 3. dockerd with the wrapper as its default runtime. A daemon.json of
# another's (a Docker installed but stopped) is kept beside it.
mkdir -p /etc/docker
if [[ -f /etc/docker/daemon.json ]] && ! grep -q runc-sandbox /etc/docker/daemon.json; then
  cp /etc/docker/daemon.json /etc/docker/daemon.json.before-sandbox-docker
  echo "sandbox-docker: replacing /etc/docker/daemon.json (kept as /etc/docker/daemon.json.before-sandbox-docker)"
fi
cat >/etc/docker/daemon.json <<'EOF'
{
  "runtimes": {"runc-sandbox": {"path": "/usr/local/bin/runc-sandbox"}},
  "default-runtime": "runc-sandbox"
}
EOF
echo "sandbox-docker: starting dockerd (log: .cluster/dockerd.log)"
setsid nohup dockerd >"$root/.cluster/dockerd.log" 2>&1 </dev/null &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    echo "sandbox-docker: Docker $(docker version --format '{{.Server.Version}}') answers (storage driver: $(docker info --format '{{.Driver}}'), cgroup $(docker info --format '{{.CgroupVersion}}'))"
    # A docker client found first on PATH may be another install's (a newer
    # one in /usr/local/bin): it talks to this daemon at the daemon's older
    # API version, which kind and the image build work with. Say which.
    client=$(docker version --format '{{.Client.Version}}' 2>/dev/null || true)
    echo "sandbox-docker: the docker client is $(command -v docker) ($client); dockerd keeps running after cluster-down: stop it with kill \$(cat /var/run/docker.pid); its images are under /var/lib/docker"
    exit 0
  fi
  sleep 1
done
echo "sandbox-docker: dockerd did not answer within 60 s; the end of its log:" >&2
tail -20 "$root/.cluster/dockerd.log" >&2
exit 1
