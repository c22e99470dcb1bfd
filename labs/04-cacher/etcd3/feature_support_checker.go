package etcd3

// Whether etcd serves the RangeStream RPC.
//
// Upstream twin: `defaultFeatureSupportChecker`,
// k8s.io/apiserver@v0.37.0/pkg/storage/feature/feature_support_checker.go:69-75,
// its `Supports` (:91-110) and `MarkUnsupported` (:122-131), for
// `storage.RangeStream` only.
//
// What it leaves out: upstream keeps one checker for the whole process
// (`DefaultFeatureSupportChecker`, :42) and gives it no way to change its
// clock from outside the package; here each Store has its own, with the
// clock its Config gives, so a test can move time. And the
// RequestWatchProgress check (`CheckClient`, which asks each endpoint its
// version): this lab's stores always request progress.

import (
	"sync"
	"time"

	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"
)

// rangeStreamRecheckInterval is how long RangeStream stays marked
// unsupported before Supports says yes again, as upstream's
// `rangeStreamRecheckInterval`
// (k8s.io/apiserver@v0.37.0/pkg/storage/feature/feature_support_checker.go:45-47):
// an etcd upgraded from 3.6 to 3.7 is streamed from within 10 minutes.
const rangeStreamRecheckInterval = 10 * time.Minute

// featureSupportChecker remembers when etcd last answered RangeStream
// with codes.Unimplemented.
type featureSupportChecker struct {
	lock                     sync.Mutex
	rangeStreamUnsupportedAt time.Time
	clock                    clock.PassiveClock
}

// Supports reports whether to try the feature: RangeStream is supported
// until marked otherwise, and again rangeStreamRecheckInterval after that.
func (f *featureSupportChecker) Supports(feature storage.Feature) bool {
	if feature != storage.RangeStream {
		return false
	}
	f.lock.Lock()
	defer f.lock.Unlock()
	if f.rangeStreamUnsupportedAt.IsZero() {
		return true
	}
	return f.clock.Since(f.rangeStreamUnsupportedAt) >= rangeStreamRecheckInterval
}

// MarkUnsupported records that etcd answered the feature's RPC with
// codes.Unimplemented, now.
func (f *featureSupportChecker) MarkUnsupported(feature storage.Feature) {
	if feature != storage.RangeStream {
		return
	}
	f.lock.Lock()
	defer f.lock.Unlock()
	f.rangeStreamUnsupportedAt = f.clock.Now()
}
