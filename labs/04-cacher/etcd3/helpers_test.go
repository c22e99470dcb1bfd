package etcd3_test

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

// clientv3Physical waits for the compaction to be applied, so the next
// request sees it.
func clientv3Physical() []clientv3.CompactOption {
	return []clientv3.CompactOption{clientv3.WithCompactPhysical()}
}

// checkLeaks fails the test if it leaves goroutines behind (checked in the
// test's last cleanup).
func checkLeaks(t *testing.T) {
	t.Helper()
	baseline := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		labtest.FlushIdleWatchStreams(etcdServer.Client)
		labtest.VerifyNoLeaks(t, append([]goleak.Option{baseline}, labtest.GRPCTransports...)...)
	})
}
