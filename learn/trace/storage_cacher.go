package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/cacher"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/embeddedetcd"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/etcd3"
)

// labStorage is what lab 03's API server serves each resource from in the
// trace: lab 04's Cacher over lab 04's etcd3 store on an embedded etcd (the
// course's miniapiserver), with four seams traced: the object handed to
// storage by lab 03's create handler (writer -> apiserver), the etcd3 store's
// Create returning with etcd's reply (etcdReplyMark), the etcd3 store's
// watch, as the Cacher's reflector receives it (etcd -> Cacher), and the
// Cacher's watch, as the WatchServer receives it (Cacher -> WatchServer).
// The returned func stops the Cachers' etcd.
func labStorage(tr *Tracer) (func(r *apiserver.Resource) (storage.Interface, func(), error), func(), string, error) {
	etcd, err := embeddedetcd.Start(embeddedetcd.Config{})
	if err != nil {
		return nil, nil, "", fmt.Errorf("embedded etcd: %w", err)
	}
	serializer := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{})
	codec := runtime.NewCodec(scheme.Codecs.EncoderForVersion(serializer, corev1.SchemeGroupVersion), scheme.Codecs.UniversalDeserializer())
	build := func(r *apiserver.Resource) (storage.Interface, func(), error) {
		store, err := etcd3.New(etcd3.Config{
			Client: etcd.Client, Codec: codec, NewFunc: r.NewFunc, NewListFunc: r.NewListFunc,
			Prefix: "/", ResourcePrefix: r.ResourcePrefix, GroupResource: r.GroupResource,
		})
		if err != nil {
			return nil, nil, err
		}
		traced := r.GroupResource.Resource == "configmaps"
		var fromEtcd storage.Interface = store
		if traced {
			fromEtcd = traceStorage{Interface: store,
				afterCreate: func(out runtime.Object) { tr.markObject(etcdReplyMark, out) },
				onEvent:     func(ev watchEvent) { tr.markEvent("etcd -> Cacher", ev) },
			}
		}
		c, err := cacher.NewCacherFromConfig(cacher.Config{
			Storage: fromEtcd, Versioner: store.Versioner(), GroupResource: r.GroupResource, ResourcePrefix: r.ResourcePrefix,
			KeyFunc: r.KeyFunc, GetAttrsFunc: r.GetAttrsFunc, IndexerFuncs: r.IndexerFuncs,
			NewFunc: r.NewFunc, NewListFunc: r.NewListFunc,
		})
		if err != nil {
			return nil, nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for !c.Ready() {
			select {
			case <-ctx.Done():
				c.Stop()
				return nil, nil, fmt.Errorf("cacher for %s not ready after 30s", r.GroupResource)
			case <-time.After(10 * time.Millisecond): // polling Ready, with the deadline above
			}
		}
		if !traced {
			return c, c.Stop, nil
		}
		return traceStorage{Interface: c,
			beforeCreate: func(obj runtime.Object) { tr.markObject("writer -> apiserver", obj) },
			onEvent:      func(ev watchEvent) { tr.markEvent("Cacher -> WatchServer", ev) },
		}, c.Stop, nil
	}
	return build, func() { etcd.Close() }, "lab 04's Cacher over lab 04's etcd3 store on an embedded etcd", nil
}
