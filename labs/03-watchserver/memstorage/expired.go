//go:build !exercise

// Upstream: k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_history.go
// (watchCacheHistory.GetIntervalLocked, which watchCache.getAllEventsSinceLocked
// calls: "too old resource version", made by
// `NewResourceExpired`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_history.go:236-238) and
// k8s.io/apimachinery@v0.37.0/pkg/api/errors/errors.go (NewResourceExpired).
//
// This is the solution of the exercise too-old-rv (README: "Write it
// yourself"); expired_exercise.go is the stub built with -tags exercise.

package memstorage

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// tooOldLocked returns a 410 Expired error when a watch from rv cannot be
// served from the history: it needs every event after rv, and the oldest one
// still kept (oldestLocked) is later than rv+1. The message is upstream's
// ("too old resource version: RV (OLDEST-1)"); clients match on the reason,
// and reflectors relist when they see it. nil means the replay is complete.
func (s *Storage) tooOldLocked(rv uint64) error {
	if oldest := s.oldestLocked(); rv < oldest-1 {
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, oldest-1))
	}
	return nil
}
