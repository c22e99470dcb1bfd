//go:build !exercise

// Upstream: k8s.io/client-go@v0.37.0/tools/cache/controller.go
// (processReplacedAllInfo: the cached keys a relist lacks are deleted with a
// DeletedFinalStateUnknown).
//
// This is the solution of the exercise relist-final-state-unknown (README:
// "Write it yourself"); vanished_exercise.go is the stub built with -tags
// exercise.

package informer

// vanished returns, sorted by key, a DeletedFinalStateUnknown for every
// object in cache whose key the relist (listed) does not have. Such an
// object was deleted while the watch was down: its DELETED event is lost for
// good, so the handlers can only be told "it is gone, and this is the last
// state we knew" (Obj), which is what DeletedFinalStateUnknown means.
func vanished(cache *Indexer, listed map[string]bool) []DeletedFinalStateUnknown {
	var out []DeletedFinalStateUnknown
	for _, key := range cache.ListKeys() { // ListKeys is sorted
		if listed[key] {
			continue
		}
		if obj, ok, _ := cache.GetByKey(key); ok {
			out = append(out, DeletedFinalStateUnknown{Key: key, Obj: obj})
		}
	}
	return out
}
