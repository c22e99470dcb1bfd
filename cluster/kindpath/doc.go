// Package kindpath holds the checks of the kind path (scripts/cluster-up.sh
// kind) that need no Docker engine: testdata/kind-config.yaml goes through
// kind's own loader and validation (sigs.k8s.io/kind@v0.33.0, the version
// versions.env pins), the script stops with one clear line where no engine
// answers, and it asks kind for the node image versions.env pins by digest.
//
// It has no code, only tests; it lives in cluster/ because cluster/go.mod
// (built with GOWORK=off) is where the course's non-lab dependencies are
// pinned, and sigs.k8s.io/kind must stay out of the labs' build list.
//
// The fakes here stand in for Docker and for the kind binary and are named
// as fakes: each test says what it proves about the real parts.
package kindpath
