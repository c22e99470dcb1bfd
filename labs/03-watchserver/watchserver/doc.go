// Package watchserver is lab 03's lesson package (the lesson is
// labs/03-watchserver/README.md): the apiserver's streaming side, rebuilt.
// It takes a watch request apart, asks storage for a watch.Interface, and
// writes each event to the client as one frame of a long HTTP response,
// encoded once for every watcher and flushed when no further event waits.
//
// Read it in data-flow order:
//
//	options.go       ParseListOptions: the query of a watch, defaulted and validated
//	handler.go       ServeWatch: the timeout, storage's Watch, then the WatchServer
//	watchserver.go   WatchServer: frames, flush, and the four ways a stream ends
//	encode.go        JSONEncoder: one encoding per event, cached on the object
//	flush.go         when to flush (the exercise flush-when-idle)
//	compression.go   gzip for watch-lists, one gzip member per flush (new in 1.37)
//
// Upstream, at Kubernetes v1.37.0, this is k8s.io/apiserver's
// pkg/endpoints/handlers (get.go, watch.go, response.go); each file here names
// its counterpart and what it leaves out. The storage it reads from is lab
// 03's memstorage, or lab 04's Cacher over etcd.
package watchserver
