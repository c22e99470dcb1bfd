package informer

import (
	"context"

	"testing"

	"go.uber.org/goleak"
)

// Every informer, reflector and fake watch a test starts must be gone when
// it ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// klog's flush daemon, started by client-go's init.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	)
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}
