//go:build exercise

// Exercise too-old-rv: the stub of expired.go, built with -tags exercise.
// README: "Write it yourself", too-old-rv. Check: scripts/labs check 03 too-old-rv.

package memstorage

// tooOldLocked decides whether a watch from rv can be served from the
// history ring (s.history, oldest event first; s.oldestLocked() is the RV of
// the oldest event a watch can still be given). nil means yes.
//
// TODO(exercise too-old-rv): Goal: a watch from a resourceVersion the
// history no longer reaches fails with 410 Expired, with the message the
// real apiserver gives, so that its client lists again.
//
// As shipped, this stub always says yes: such a watch replays only part of
// what the client missed, and the client never knows.
// TestTooOldResourceVersionIsExpired shows the event the watch begins with,
// as a diff from the ERROR it wants.
func (s *Storage) tooOldLocked(rv uint64) error {
	return nil
}
