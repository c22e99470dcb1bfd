# Sourced, not run: the --release flag of the scripts that build or start a
# release (build-labcluster.sh, kind-node-image.sh, kind-e2e.sh), parsed in
# one place. The caller says what each release means to it.
#
# release_from_args USAGE [ARGS...]: sets release to "current" (no
# argument) or to the value of --release VALUE / --release=VALUE; any other
# argument prints "usage: USAGE" and exits 2.
release_from_args() {
  local usage=$1
  shift
  release=current
  case "${1:-}" in
  "") ;;
  --release=*) release=${1#--release=} ;;
  --release) release=${2:-} ;;
  *) echo "usage: $usage" >&2; exit 2 ;;
  esac
}
