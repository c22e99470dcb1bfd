//go:build exercise

// Exercise index-delete: the stub of index_delete.go, built with -tags exercise.
// README: "Write it yourself", index-delete. Check: scripts/labs check 05 index-delete.

package informer

// deleteKeyFromIndex is called by the Indexer (setLocked) for every value an
// object was indexed under, when that object is deleted or replaced by a
// newer version. idx maps an indexed value to the set of keys indexed under
// it (a sets.Set[string]).
//
// TODO(exercise index-delete): this stub does nothing, so a deleted pod stays
// listed under its node, and a pod moved to another node is listed under
// both. Remove key from idx[value]; when that leaves the set empty, remove
// value from idx as well (the Indexer's invariant: no value maps to an
// empty set).
func deleteKeyFromIndex(idx index, value, key string) {
}
