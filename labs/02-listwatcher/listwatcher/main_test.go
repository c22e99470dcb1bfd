package listwatcher

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is left running: a
// watch that is stopped must end its receive goroutine and its connection.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
