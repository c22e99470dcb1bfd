package watchcurl_test

import (
	"testing"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/01-watch-curl/internal/watchcmd"
)

// TestMain finds the lab cluster (or starts one for this test binary) and
// makes cmd/watch runnable from the scripts as `exec watch`.
func TestMain(m *testing.M) {
	labkit.Main(m, map[string]labkit.Program{
		"watch": watchcmd.Main,
	})
}

// TestScripts runs every scenario in testdata/script against the real
// cluster. One scenario: go test -run TestScripts/too-old
func TestScripts(t *testing.T) {
	// In exercise mode the script go-watch fails until watch-query and
	// refused-watch are written: exercises.json lists it, and RunScripts
	// names those two exercises when it fails, and none for the others.
	labkit.RunScripts(t, "testdata/script", labkit.Options{})
}
