package labkit

import (
	"testing"
)

func TestMain(m *testing.M) { Main(m, nil) }

// TestScripts runs the harness's own exercises: each labkit command against
// the real cluster.
func TestScripts(t *testing.T) { RunScripts(t, "testdata/script", nil) }
