//go:build exercise

// Exercise index-delete: the stub of index_delete.go, built with -tags exercise.
// README: "Write it yourself", index-delete. Check: scripts/labs check 05 index-delete.

package informer

// deleteKeyFromIndex is called by the Indexer (setLocked) for every value an
// object was indexed under, when that object is deleted or replaced by a
// newer version. idx maps an indexed value to the set of keys indexed under
// it (a sets.Set[string]).
//
// TODO(exercise index-delete): Goal: after a delete or an update the index
// answers as if every object had just been indexed afresh: a deleted pod is
// under no node, an object whose index value changed under its new value
// only, and no value is left that holds no object.
//
// As shipped, this stub does nothing: a deleted pod stays listed under its
// node, and an object whose index value changed is listed under both.
// TestIndexerProperty names the seed, the step and the value at which the
// index goes stale.
func deleteKeyFromIndex(idx index, value, key string) {
}
