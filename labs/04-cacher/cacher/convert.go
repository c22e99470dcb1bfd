//go:build !exercise

// Upstream: `convertToWatchEvent` of cacheWatcher
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cache_watcher.go:373-412),
// which decides with the same table and returns a *watch.Event (one heap
// object per delivery; ours returns the event by value).
//
// This is the solution of the exercise cache-watcher-convert (README:
// "Write it yourself"); convert_exercise.go is the stub built with -tags
// exercise.

package cacher

import "k8s.io/apimachinery/pkg/watch"

// convertToWatchEvent decides what this watcher sees of an event:
//
//	matched before | matches now | client sees
//	no             | yes         | ADDED
//	yes            | yes         | MODIFIED
//	yes            | no          | DELETED (last matching state, new RV)
//	no             | no          | nothing
//
// A DELETED event "matches now" never.
func (c *cacheWatcher) convertToWatchEvent(ev *watchCacheEvent) (watch.Event, bool) {
	if ev.Type == watch.Bookmark {
		if !c.allowWatchBookmarks {
			return watch.Event{}, false
		}
		return watch.Event{Type: watch.Bookmark, Object: ev.Object}, true
	}
	cur := ev.Type != watch.Deleted && c.filter(ev.Key, ev.ObjLabels, ev.ObjFields)
	prev := ev.PrevObject != nil && c.filter(ev.Key, ev.PrevObjLabels, ev.PrevObjFields)
	switch {
	case cur && !prev:
		return watch.Event{Type: watch.Added, Object: ev.Object}, true
	case cur && prev:
		return watch.Event{Type: watch.Modified, Object: ev.Object}, true
	case prev && ev.Type == watch.Deleted:
		// A real deletion: storage already stamped the object with the
		// deletion's RV.
		return watch.Event{Type: watch.Deleted, Object: ev.Object}, true
	case prev:
		// The object stopped matching: its previous state, copied so the
		// shared object keeps its own RV, stamped with this event's RV.
		old := ev.PrevObject.DeepCopyObject()
		_ = c.versioner.UpdateObject(old, ev.ResourceVersion)
		return watch.Event{Type: watch.Deleted, Object: old}, true
	}
	return watch.Event{}, false
}
