// Package listwatcher is lab 02's lesson package (the lesson is
// labs/02-listwatcher/README.md): client-go's ListerWatcher, rebuilt from
// plain HTTP.
//
// It is a ListerWatcher written from plain HTTP: the part of
// client-go that turns "GET /api/v1/namespaces/NS/configmaps" and its
// "?watch=1" twin into Go objects and watch events.
//
// Read it in data-flow order:
//
//	listwatch.go  ListWatch: which URL, which query (ListOptions by hand), List
//	decoder.go    Decoder: newline-delimited JSON frames -> watch events
//	watcher.go    streamWatcher: a goroutine feeding Decoder output to a channel
//	errors.go     a non-200 answer or an ERROR event -> *apierrors.StatusError
//	loop.go       ListAndWatch: list, watch from the list's RV, rewatch, relist, back off
//
// Upstream, the same work is spread over k8s.io/client-go@v0.37.0
// tools/cache/listwatch.go (ListWatch), rest/request.go (Request.Watch,
// Request.Do), rest/watch/decoder.go (Decoder),
// k8s.io/apimachinery@v0.37.0 pkg/util/framer (the JSON framer),
// pkg/runtime/serializer/streaming (the streaming decoder),
// pkg/watch/streamwatcher.go (StreamWatcher) and tools/cache/reflector.go
// (Reflector.ListAndWatch). *ListWatch satisfies client-go's
// cache.ListerWatcherWithContext, so client-go's own Reflector can run on it.
package listwatcher
