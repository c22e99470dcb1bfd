// Package etcd3 is part of lab 04's lesson (the lesson is
// labs/04-cacher/README.md): kube-apiserver's etcd storage, rebuilt, the store
// the Cacher reads from.
//
// It stores Kubernetes objects in etcd, the way kube-apiserver does.
//
// Upstream twin: the `store` type of k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/store.go:80
// (New, Get, GetList, Create, GuaranteedUpdate, Delete), and
// `interpretListError` and `interpretWatchError`
// (k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/errors.go:31-89). The watch
// half is in watcher.go here, as upstream.
//
// What it keeps from upstream:
//   - keys are <Prefix>/<resource>/<namespace>/<name>, e.g.
//     /registry/pods/default/web-1: callers pass the key without the prefix
//     (/pods/default/web-1), exactly as upstream's registry passes it to
//     storage, so upstream's Cacher can sit in front of this store unchanged;
//   - the value is the object encoded by the configured runtime.Codec (JSON
//     here; kube-apiserver uses protobuf for built-in types);
//   - an object's resourceVersion is the etcd ModRevision of its key, and a
//     list's resourceVersion is the etcd revision the read was served at;
//   - Create is a transaction "the key does not exist now" (upstream's
//     Create calls `OptimisticPut` with revision 0,
//     k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/store.go:327, which
//     compares `ModRevision` with it,
//     go.etcd.io/etcd/client/v3@v3.7.0/kubernetes/client.go:83-86; we compare
//     CreateRevision = 0: the same test), so a
//     second create fails with AlreadyExists; updates and deletes are transactions
//     "ModRevision is still what I read" (compare-and-swap), retried on a
//     lost race, with the caller's Preconditions (uid, resourceVersion)
//     checked against the object actually stored;
//   - a read or watch from a compacted revision fails with 410 Expired.
//
// What it leaves out: value transformers (encryption at rest), TTL leases,
// the compactor (tests compact by calling etcd), size estimation, the
// feature-gated paths (`AllowUnsafeMalformedObjectDeletion`, the deletion
// of objects that no longer decode,
// k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/store.go:365-367, and
// `ShardedListAndWatch`, k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/store.go:1016),
// and metrics. Methods the lab does not teach say so in their error.
package etcd3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"

	etcdrpc "go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
)

// Config describes one resource stored in etcd.
type Config struct {
	// Client talks to etcd. Required. The store does not close it.
	Client *clientv3.Client
	// Codec encodes objects to the bytes stored in etcd and decodes them back.
	// Required.
	Codec runtime.Codec
	// NewFunc returns a new empty object of the resource (e.g. &v1.Pod{}).
	NewFunc func() runtime.Object
	// NewListFunc returns a new empty list (e.g. &v1.PodList{}).
	NewListFunc func() runtime.Object
	// Prefix is prepended to every key. Default "/registry", as
	// kube-apiserver's --etcd-prefix.
	Prefix string
	// ResourcePrefix is the key of the resource's collection, e.g. "/pods".
	// Every key this store is asked about must start with it.
	ResourcePrefix string
	// GroupResource names the resource in errors (e.g. {Resource: "pods"}).
	GroupResource schema.GroupResource
}

// Store implements storage.Interface over etcd.
type Store struct {
	client         *clientv3.Client
	codec          runtime.Codec
	newFunc        func() runtime.Object
	newListFunc    func() runtime.Object
	pathPrefix     string // "/registry/", always ending in "/"
	resourcePrefix string // "/pods"
	groupResource  schema.GroupResource
	versioner      storage.Versioner
}

var _ storage.Interface = (*Store)(nil)

// New returns a Store for one resource.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil || cfg.Codec == nil || cfg.NewFunc == nil || cfg.NewListFunc == nil {
		return nil, errors.New("etcd3.New: Client, Codec, NewFunc and NewListFunc are required")
	}
	if cfg.ResourcePrefix == "" || cfg.ResourcePrefix == "/" || !strings.HasPrefix(cfg.ResourcePrefix, "/") {
		return nil, fmt.Errorf("etcd3.New: ResourcePrefix %q must start with / and name a resource, e.g. /pods", cfg.ResourcePrefix)
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = "/registry"
	}
	pathPrefix := path.Join("/", prefix)
	if !strings.HasSuffix(pathPrefix, "/") {
		pathPrefix += "/"
	}
	return &Store{
		client:         cfg.Client,
		codec:          cfg.Codec,
		newFunc:        cfg.NewFunc,
		newListFunc:    cfg.NewListFunc,
		pathPrefix:     pathPrefix,
		resourcePrefix: cfg.ResourcePrefix,
		groupResource:  cfg.GroupResource,
		versioner:      storage.APIObjectVersioner{},
	}, nil
}

// Versioner reads and writes metadata.resourceVersion.
func (s *Store) Versioner() storage.Versioner { return s.versioner }

// etcdKey checks a caller's key and returns the key in etcd.
func (s *Store) etcdKey(key string, recursive bool) (string, error) {
	k, err := storage.PrepareKey(s.resourcePrefix, key, recursive)
	if err != nil {
		return "", err
	}
	// path.Join would drop the trailing "/" a recursive key needs.
	return s.pathPrefix + strings.TrimPrefix(k, "/"), nil
}

// Create writes obj at key if no object exists there.
func (s *Store) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	if ttl != 0 {
		return errNotSupported("Create with a TTL")
	}
	k, err := s.etcdKey(key, false)
	if err != nil {
		return err
	}
	// The resourceVersion is etcd's to assign: a client-supplied one is
	// rejected with `ErrResourceVersionSetOnCreate`, as upstream does
	// (k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/store.go:298).
	if version, err := s.versioner.ObjectResourceVersion(obj); err == nil && version != 0 {
		return storage.ErrResourceVersionSetOnCreate
	}
	if err := s.versioner.PrepareObjectForStorage(obj); err != nil {
		return fmt.Errorf("PrepareObjectForStorage failed: %w", err)
	}
	data, err := runtime.Encode(s.codec, obj)
	if err != nil {
		return err
	}
	// CreateRevision 0 means "does not exist now" (never created, or
	// deleted since): the transaction fails if anyone else created it first.
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(data))).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return storage.NewKeyExistsError(key, 0)
	}
	if out != nil {
		return s.decode(data, out, resp.Header.Revision)
	}
	return nil
}

// Get reads one object.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	k, err := s.etcdKey(key, false)
	if err != nil {
		return err
	}
	minRV, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	// Every etcd read here is linearizable: "" (most recent) and "0" (any)
	// are served alike, which is allowed since the newest data satisfies both.
	resp, err := s.client.Get(ctx, k)
	if err != nil {
		return err
	}
	if err := checkMinimumRV(minRV, resp.Header.Revision); err != nil {
		return err
	}
	if len(resp.Kvs) == 0 {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(out)
		}
		return storage.NewKeyNotFoundError(key, 0)
	}
	kv := resp.Kvs[0]
	return s.decode(kv.Value, out, kv.ModRevision)
}

// checkMinimumRV fails a "not older than minRV" read that etcd served at an
// older revision: it can only happen if the caller invented a future RV.
func checkMinimumRV(minRV uint64, actual int64) error {
	if minRV > uint64(actual) {
		return storage.NewTooLargeResourceVersionError(minRV, uint64(actual), 0)
	}
	return nil
}

// GetList reads the objects under key (a collection if opts.Recursive).
//
// Resource-version semantics, as upstream's `ValidateListOptions` decides them (k8s.io/apiserver@v0.37.0/pkg/storage/interfaces.go:371-415):
//   - "" : the most recent data (a linearizable etcd read);
//   - "0" or N with Match=NotOlderThan: any data at least as new as N; etcd
//     serves its newest, which qualifies unless N is in the future;
//   - N with Match=Exact, or N with a limit (legacy paging), or a continue
//     token: data exactly at revision N, read from etcd's MVCC history; a
//     compacted N fails with 410 Expired.
//
// With a limit, etcd is asked for pages until enough objects pass the
// predicate; the continue token records the last key and the revision, so
// every page is read at the same revision.
func (s *Store) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	k, err := s.etcdKey(key, opts.Recursive)
	if err != nil {
		return err
	}
	withRev, continueKey, err := storage.ValidateListOptions(k, s.versioner, opts)
	if err != nil {
		return err
	}
	minRV, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	listPtr, err := meta.GetItemsPtr(listObj)
	if err != nil {
		return err
	}
	v, err := conversion.EnforcePtr(listPtr)
	if err != nil || v.Kind() != reflect.Slice {
		return fmt.Errorf("need a pointer to a slice, got %T", listPtr)
	}
	// Start from an empty list, whatever the caller's object held.
	v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	pred := opts.Predicate
	paging := opts.Recursive && pred.Limit > 0

	var getOpts []clientv3.OpOption
	fromKey := k
	if opts.Recursive {
		getOpts = append(getOpts, clientv3.WithRange(clientv3.GetPrefixRangeEnd(k)))
		if continueKey != "" {
			fromKey = continueKey
		}
	}
	if withRev != 0 {
		getOpts = append(getOpts, clientv3.WithRev(withRev))
	}
	if paging {
		// Pages of Limit keys; if the predicate drops some, read on.
		getOpts = append(getOpts, clientv3.WithLimit(pred.Limit))
	}

	var (
		lastKey   []byte
		more      bool
		remaining int64
		rev       = withRev
	)
pages:
	for {
		resp, err := s.client.Get(ctx, fromKey, getOpts...)
		if err != nil {
			// A compacted revision: fromKey is where this read started,
			// where a client told to go on inconsistently would resume.
			return interpretListError(err, opts.Predicate.Continue != "", fromKey, k)
		}
		if rev == 0 {
			// Pin every further page to the revision of the first one.
			rev = resp.Header.Revision
			getOpts = append(getOpts, clientv3.WithRev(rev))
		}
		for i, kv := range resp.Kvs {
			lastKey = kv.Key
			obj := s.newFunc()
			if err := s.decode(kv.Value, obj, kv.ModRevision); err != nil {
				return err
			}
			ok, err := pred.Matches(obj)
			if err != nil {
				return err
			}
			if ok {
				v.Set(reflect.Append(v, reflect.ValueOf(obj).Elem()))
			}
			if paging && int64(v.Len()) == pred.Limit {
				// Full. There is more if any key follows this one.
				more = i < len(resp.Kvs)-1 || resp.More
				remaining = resp.Count - int64(i) - 1
				break pages
			}
		}
		if !paging || !resp.More {
			break
		}
		fromKey = string(lastKey) + "\x00"
	}
	if err := checkMinimumRV(minRV, rev); err != nil && opts.ResourceVersionMatch != metav1.ResourceVersionMatchExact {
		return err
	}
	continueValue := ""
	var remainingItemCount *int64
	if more {
		continueValue, err = storage.EncodeContinue(string(lastKey)+"\x00", k, rev)
		if err != nil {
			return err
		}
		// The count is exact only if no predicate dropped anything.
		if pred.Empty() && remaining > 0 {
			remainingItemCount = &remaining
		}
	}
	return s.versioner.UpdateList(listObj, uint64(rev), continueValue, remainingItemCount)
}

// GuaranteedUpdate reads the object, lets tryUpdate change it and writes it
// back if no one else wrote in between; if someone did, it reads again and
// calls tryUpdate again.
func (s *Store) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	k, err := s.etcdKey(key, false)
	if err != nil {
		return err
	}
	// cachedExistingObject is a hint to skip the first read; we always read,
	// which upstream also does when the hint is stale (`origStateIsCurrent`,
	// k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/store.go:562-572).
	for {
		cur, data, rev, err := s.read(ctx, k, ignoreNotFound)
		if err != nil {
			if storage.IsNotFound(err) {
				return storage.NewKeyNotFoundError(key, 0)
			}
			return err
		}
		if err := preconditions.Check(key, cur); err != nil {
			return err
		}
		updated, ttl, err := tryUpdate(cur, storage.ResponseMeta{ResourceVersion: uint64(rev)})
		if err != nil {
			return err
		}
		if ttl != nil && *ttl != 0 {
			return errNotSupported("GuaranteedUpdate with a TTL")
		}
		if err := s.versioner.PrepareObjectForStorage(updated); err != nil {
			return fmt.Errorf("PrepareObjectForStorage failed: %w", err)
		}
		newData, err := runtime.Encode(s.codec, updated)
		if err != nil {
			return err
		}
		if rev != 0 && bytes.Equal(newData, data) {
			// Nothing changed: no write, no event, same resourceVersion.
			return s.decode(data, destination, rev)
		}
		// The compare-and-swap: ModRevision is still the one we read (0
		// for "does not exist", when ignoreNotFound made us create it).
		resp, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", rev)).
			Then(clientv3.OpPut(k, string(newData))).
			Commit()
		if err != nil {
			return err
		}
		if !resp.Succeeded {
			continue // someone wrote first: read their version, try again
		}
		return s.decode(newData, destination, resp.Header.Revision)
	}
}

// Delete removes the object at key and returns its last state in out.
func (s *Store) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	k, err := s.etcdKey(key, false)
	if err != nil {
		return err
	}
	for {
		cur, data, rev, err := s.read(ctx, k, false)
		if err != nil {
			if storage.IsNotFound(err) {
				return storage.NewKeyNotFoundError(key, 0)
			}
			return err
		}
		if err := preconditions.Check(key, cur); err != nil {
			return err
		}
		if validateDeletion != nil {
			if err := validateDeletion(ctx, cur); err != nil {
				return err
			}
		}
		resp, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", rev)).
			Then(clientv3.OpDelete(k)).
			Commit()
		if err != nil {
			return err
		}
		if !resp.Succeeded {
			continue
		}
		// The deleted object carries the revision of the deletion, which
		// is also the resourceVersion its DELETED watch event carries.
		return s.decode(data, out, resp.Header.Revision)
	}
}

// read returns the object at etcd key k, its bytes and its ModRevision.
// With ignoreNotFound, a missing key is an empty object at revision 0.
func (s *Store) read(ctx context.Context, k string, ignoreNotFound bool) (runtime.Object, []byte, int64, error) {
	resp, err := s.client.Get(ctx, k)
	if err != nil {
		return nil, nil, 0, err
	}
	if len(resp.Kvs) == 0 {
		if ignoreNotFound {
			return s.newFunc(), nil, 0, nil
		}
		return nil, nil, 0, storage.NewKeyNotFoundError(k, 0)
	}
	kv := resp.Kvs[0]
	obj := s.newFunc()
	if err := s.decode(kv.Value, obj, kv.ModRevision); err != nil {
		return nil, nil, 0, err
	}
	return obj, kv.Value, kv.ModRevision, nil
}

// decode fills into from data and sets its resourceVersion to rev.
func (s *Store) decode(data []byte, into runtime.Object, rev int64) error {
	if _, _, err := s.codec.Decode(data, nil, into); err != nil {
		return storage.NewCorruptObjError(string(data), err)
	}
	return s.versioner.UpdateObject(into, uint64(rev))
}

// Stats counts the resource's keys.
func (s *Store) Stats(ctx context.Context) (storage.Stats, error) {
	k := s.pathPrefix + strings.TrimPrefix(s.resourcePrefix, "/") + "/"
	resp, err := s.client.Get(ctx, k, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return storage.Stats{}, err
	}
	return storage.Stats{ObjectCount: resp.Count}, nil
}

// ReadinessCheck reports ready: the client reconnects by itself.
func (s *Store) ReadinessCheck() error { return nil }

// RequestWatchProgress asks etcd to send a progress notification (the
// current revision) on the watch streams of this client. The context must
// carry the same gRPC metadata as the watch (WithRequireLeader, see
// watchContext), or etcd answers on another stream and no watch sees it.
func (s *Store) RequestWatchProgress(ctx context.Context) error {
	return s.client.RequestProgress(watchContext(ctx))
}

// GetCurrentResourceVersion returns etcd's current revision, read with a
// linearizable count-only request on the resource's prefix.
func (s *Store) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	k := s.pathPrefix + strings.TrimPrefix(s.resourcePrefix, "/") + "/"
	resp, err := s.client.Get(ctx, k, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return uint64(resp.Header.Revision), nil
}

// EnableResourceSizeEstimation is accepted and ignored: Stats counts keys
// and estimates no sizes.
func (s *Store) EnableResourceSizeEstimation(storage.KeysFunc) error { return nil }

// CompactRevision returns 0: this store does not run the compactor, so it
// observes no compaction of its own (the interface allows 0).
func (s *Store) CompactRevision() int64 { return 0 }

// The messages of a compacted list, in upstream's words, since clients show
// them to people: `expired`, `continueExpired` and `inconsistentContinue`
// (k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/errors.go:52-64).
const (
	listExpired          = "The resourceVersion for the provided list is too old."
	continueExpired      = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."
	inconsistentContinue = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, " +
		"or use the continue token in this response to retrieve the remainder of the results. " +
		"Continuing with the provided token results in an inconsistent list - objects that were created, " +
		"modified, or deleted between the time the first chunk was returned and now may show up in the list."
)

// interpretListError turns etcd's "compacted" into the 410 Expired a client
// understands, as upstream's `interpretListError` and
// `handleCompactedErrorForPaging` do (k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/errors.go:66-88). A continued
// list (continuing: the request had a continue token) whose revision is gone
// cannot be finished consistently; the 410 then carries, in the Status's
// metadata.continue, a new token for the same next key at revision -1, which
// means "the latest": the client may finish the list at a newer revision,
// knowing it mixes two points in time, instead of starting over.
func interpretListError(err error, continuing bool, nextKey, keyPrefix string) error {
	if !isCompacted(err) {
		return err
	}
	if !continuing {
		return apierrors.NewResourceExpired(listExpired)
	}
	token, encodeErr := storage.EncodeContinue(nextKey, keyPrefix, -1)
	if encodeErr != nil {
		return apierrors.NewResourceExpired(continueExpired)
	}
	expired := apierrors.NewResourceExpired(inconsistentContinue)
	expired.ErrStatus.ListMeta.Continue = token
	return expired
}

func errNotSupported(what string) error {
	return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "storage"}, what+" (not supported by this lab)")
}

func isCompacted(err error) bool { return errors.Is(err, etcdrpc.ErrCompacted) }
