//go:build !exercise

// Upstream: k8s.io/client-go@v0.37.0/tools/cache/thread_safe_store.go
// (storeIndex.deleteKeyFromIndex, called by updateIndices for every value
// the old object was indexed under).
//
// This is the solution of the exercise index-delete (README: "Write it
// yourself"); index_delete_exercise.go is the stub built with -tags exercise.

package informer

// deleteKeyFromIndex removes key from the keys indexed under value in idx.
// The Indexer calls it for every value the object *was* indexed under, when
// the object is deleted or replaced by a new version (which is then indexed
// under its own values). A value whose set becomes empty is deleted from
// the index too: otherwise ListIndexFuncValues would keep reporting a node,
// a namespace or a label value that no object has any more.
func deleteKeyFromIndex(idx index, value, key string) {
	set := idx[value]
	if set == nil {
		return
	}
	set.Delete(key)
	if set.Len() == 0 {
		delete(idx, value)
	}
}
