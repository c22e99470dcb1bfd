//go:build exercise

// Exercise cache-watcher-convert: the stub of convert.go, built with -tags exercise.
// README: "Write it yourself", cache-watcher-convert. Check: scripts/labs check 04 cache-watcher-convert.

package cacher

import "k8s.io/apimachinery/pkg/watch"

// convertToWatchEvent decides what this watcher's client sees of ev, an
// event of the watchCache: c.filter(key, labels, fields) says whether an
// object state matches the watcher's selectors; ev.ObjLabels/ObjFields are
// the new state's, ev.PrevObject and ev.PrevObjLabels/PrevObjFields the old
// one's (nil PrevObject: the object is new).
//
// TODO(exercise cache-watcher-convert): Goal: a watcher's client sees the
// objects that match its selectors as if it watched only them: an object
// that enters the selection arrives as new, one that leaves it is gone for
// the client, and one that never matched is never mentioned.
//
// As shipped, this stub forwards an event when the new state matches and
// drops it otherwise: a watcher of app=web never learns that a pod left the
// selection, and one that enters it arrives as a MODIFIED of an object the
// client never had. TestWatchFromRVSelectorsAndDeletedOnMismatch shows the
// app=web watch's events as a diff from the expected ones.
func (c *cacheWatcher) convertToWatchEvent(ev *watchCacheEvent) (watch.Event, bool) {
	if ev.Type == watch.Bookmark {
		if !c.allowWatchBookmarks {
			return watch.Event{}, false
		}
		return watch.Event{Type: watch.Bookmark, Object: ev.Object}, true
	}
	if ev.Type != watch.Deleted && c.filter(ev.Key, ev.ObjLabels, ev.ObjFields) {
		return watch.Event{Type: ev.Type, Object: ev.Object}, true
	}
	return watch.Event{}, false
}
