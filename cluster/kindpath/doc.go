// Package kindpath holds the checks of the kind path (scripts/cluster-up.sh
// kind) that need no Docker engine: testdata/kind-config.yaml and the
// sandbox's testdata/kind-config-sandbox.yaml go through kind's own loader
// and validation (sigs.k8s.io/kind@v0.33.0, the version versions.env pins);
// the script stops with one clear line where no engine answers; it asks
// kind for the node image versions.env pins by digest, or the one
// KIND_NODE_IMAGE names; Ctrl-C during a start removes the half-made
// cluster; and the node image built here (scripts/kind-node-image.sh) pins
// its programs at the versions kubeadm and kind's base image name. The run
// on a real engine is scripts/kind-e2e.sh.
//
// It has no code, only tests; it lives in cluster/ because cluster/go.mod
// (built with GOWORK=off) is where the course's non-lab dependencies are
// pinned, and sigs.k8s.io/kind must stay out of the labs' build list.
//
// The fakes here stand in for Docker and for the kind binary and are named
// as fakes: each test says what it proves about the real parts.
package kindpath
