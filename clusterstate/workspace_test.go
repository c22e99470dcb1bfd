package clusterstate

import (
	"os/exec"
	"strings"
	"testing"
)

// TestWorkspaceLeavesOutKubernetes: cluster/ is built with GOWORK=off and is
// not in go.work, so neither it nor k8s.io/kubernetes (which it needs, and
// which pins k8s.io/* through replace directives of its own) is in the labs'
// build list; labs and tests run labcluster's binary instead of importing it.
func TestWorkspaceLeavesOutKubernetes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	cmd := exec.Command("go", "list", "-m", "all")
	cmd.Env = append(cmd.Environ(), "GOWORK=", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		mod, _, _ := strings.Cut(line, " ")
		switch mod {
		case "k8s.io/kubernetes", "github.com/listwatch-labs/listwatch-labs/cluster":
			t.Errorf("%s is in the workspace's build list", mod)
		}
	}
	if !strings.Contains(string(out), "github.com/listwatch-labs/listwatch-labs/labkit\n") {
		t.Errorf("labkit is not in the build list: is this the course's workspace?\n%s", out)
	}
}
