//go:build exercise

// Exercise too-old-rv: the stub of expired.go, built with -tags exercise.
// README: "Write it yourself", too-old-rv. Check: scripts/labs check 03 too-old-rv.

package memstorage

// tooOldLocked decides whether a watch from rv can be served from the
// history ring (s.history, oldest event first; s.oldestLocked() is the RV of
// the oldest event a watch can still be given). nil means yes.
//
// TODO(exercise too-old-rv): this stub always says yes, so a watch from an RV
// the history has already dropped replays only part of what the client
// missed, and the client never knows. Return a 410 Expired error
// (apierrors.NewResourceExpired) with upstream's message,
// "too old resource version: RV (OLDEST-1)", when rv is older than that.
func (s *Storage) tooOldLocked(rv uint64) error {
	return nil
}
