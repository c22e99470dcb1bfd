package informer

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Status follows the Reflector through what the live view shows: the
// streaming list and its watch, the 410, the backoff, and the relist.
func TestReflectorStatusThroughA410(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		srv.create("a", "1")
		// (No check before the first sync: the Reflector's goroutine may
		// have listed and started watching already, the fake server
		// answering at once; under load it often has.)
		r, _, _ := runReflector(t, srv, ReflectorOptions{Rand: func() float64 { return 0 }})
		synctest.Wait()
		s := r.Status()
		if s.Phase != PhaseWatching || s.Lists != 1 || s.Watches != 1 || s.Errors != 0 || s.LastSyncResourceVersion != "1" {
			t.Errorf("after the first sync: %+v, want watching, 1 list, 1 watch, no error, at RV 1", s)
		}
		srv.expire()
		synctest.Wait()
		s = r.Status()
		if s.Phase != PhaseBackingOff || s.Errors != 1 || !strings.Contains(s.LastError, "too old resource version") {
			t.Errorf("after the 410: %+v, want backing off, one error, the 410", s)
		}
		elapse(time.Second) // the bubble's fake clock: past the 800 ms backoff
		synctest.Wait()
		s = r.Status()
		if s.Phase != PhaseWatching || s.Lists != 2 || s.Watches != 2 {
			t.Errorf("after the relist: %+v, want watching again, 2 lists, 2 watches", s)
		}
	})
}
