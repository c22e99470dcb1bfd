// Package informer is lab 05's lesson package. It rebuilds client-go's
// informer (k8s.io/client-go@v0.37.0/tools/cache), the client side's last
// layer: the Reflector that lists and watches, the FIFO between it and the
// cache, the indexed cache itself, and the SharedIndexInformer that calls
// event handlers. The lesson that walks through it is
// labs/05-informer/README.md.
//
// Read it in data-flow order:
//
//	reflector.go         Reflector: streaming list (or paginated LIST), watch, rewatch, relist on 410
//	backoff.go           the reflector's backoff: 800ms doubling to 30s, jittered, reset every 2 min
//	delta.go             Delta, Deltas, DeltaType: what a FIFO holds
//	real_fifo.go         RealFIFO: every notification in arrival order; Replace as one item; batches
//	delta_fifo.go        DeltaFIFO: the classic queue of the 2020 article, one Deltas per key
//	thread_safe_store.go Indexer: the cache, with named indexes kept exact on update and delete
//	index.go             the index functions: namespace, spec.nodeName, and one to copy
//	shared_informer.go   SharedIndexInformer: FIFO -> Indexer -> handlers; resync; HasSynced; removing a handler
//	processor_listener.go one growing buffer and one goroutine per handler
//	lister.go            Lister: typed reads from the Indexer
//
// Every file names its twin in k8s.io/client-go@v0.37.0/tools/cache and what
// it leaves out. The defaults are client-go v0.37.0's, as its
// `defaultVersionedKubernetesFeatureGates` sets them
// (k8s.io/client-go@v0.37.0/features/known_features.go:111-145), the same
// gates as in 1.36: InOrderInformers (GA, locked on since 1.36: a
// RealFIFO, not a DeltaFIFO), InOrderInformersBatchProcess (beta, on),
// AtomicFIFO (beta, on since 1.36), UnlockWhileProcessingFIFO (beta, on
// since 1.36) and WatchListClient (beta, on since 1.35). Handlers are
// client-go's own cache.ResourceEventHandler and tombstones are client-go's
// cache.DeletedFinalStateUnknown, so a handler written for client-go runs
// unchanged on this informer, which is how the differential tests compare
// the two call by call.
package informer
