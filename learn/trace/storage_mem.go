package main

import (
	"k8s.io/apiserver/pkg/storage"

	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/memstorage"
)

// labStorage is what lab 03's API server serves ConfigMaps from in the
// trace: lab 03's memstorage, standing in for etcd and lab 04's Cacher,
// wrapped so the trace sees each event leave it for the WatchServer.
func labStorage(tr *Tracer) (func(r *apiserver.Resource) (storage.Interface, func(), error), string) {
	revision := memstorage.NewRevision(1)
	return func(r *apiserver.Resource) (storage.Interface, func(), error) {
		s := memstorage.New(memstorage.Config{ResourcePrefix: r.ResourcePrefix, NewFunc: r.NewFunc, Revision: revision})
		if r.GroupResource.Resource != "configmaps" {
			return s, s.Close, nil
		}
		traced := traceStorage{Interface: s, onEvent: func(ev watchEvent) {
			if ok, d := tr.eventDetail(ev); ok {
				tr.mark("storage -> WatchServer", "memstorage", "WatchServer", "memstorage watcher.result -> WatchServer.HandleHTTP (lab 03)", d)
			}
		}}
		return traced, s.Close, nil
	}, "lab 03's memstorage (in place of etcd + lab 04's Cacher)"
}
