// Upstream: k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/watch.go
// (WatchServer, HandleHTTP, HandleWS, realTimeoutFactory) and serveWatchHandler,
// which picks HandleWS for a websocket upgrade and HandleHTTP otherwise.
//
// What we keep: one long HTTP response per watch; a frame written per event
// (encoded once for all watchers when the object allows it: encode.go) and a
// flush only when no further event is already waiting; the four ways a
// stream ends (results closed, client gone, timeout, server shutting down);
// since 1.37, gzip for a watch-list that accepts it, one gzip member per
// flush and a flush after the initial-events-end bookmark (compression.go).
// What we simplify: one media type (application/json, so frames are
// newline-delimited JSON); no metrics, tracing or memory allocator pool.

package watchserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/websocket"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// WatchServer serves one watch: it encodes the events of Watching and writes
// them to the client until one of the ends below. Build one per request,
// then call ServeHTTP.
//
// The stream ends, and ServeHTTP returns, when:
//   - Watching's channel is closed (the storage ended this watcher, or sent
//     a final ERROR event such as 410 Expired);
//   - the client goes away (the request context is cancelled);
//   - Timeout passes (the client asked with timeoutSeconds, or the server
//     chose one): the response ends normally, the client simply re-watches;
//   - ShuttingDown is closed: the server is stopping and ends every stream
//     so http.Server.Shutdown can finish.
//
// In every case Watching.Stop is called, so no goroutine is left behind.
type WatchServer struct {
	Watching watch.Interface
	// Encoder encodes each event's object (upstream: EmbeddedEncoder).
	Encoder runtime.Encoder
	// MediaType is the response Content-Type. For JSON it is plain
	// application/json: upstream adds ";stream=watch" only for other media
	// types (`serveWatchHandler`, k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/watch.go:74,
	// `mediaType`, k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/watch.go:97-110).
	MediaType string
	// Timeout ends the stream after this long; 0 or less means never (a
	// negative timeoutSeconds is handled by the watch handler: handler.go).
	Timeout time.Duration
	// ShuttingDown, when closed, ends the stream (nil: never).
	ShuttingDown <-chan struct{}
	// IsWatchListRequest is true for a watch-list: sendInitialEvents=true
	// (asked for, or defaulted) with allowWatchBookmarks=true, as upstream's
	// `isListWatchRequest`, k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/get.go:328-331.
	IsWatchListRequest bool
	// WatchListCompression is upstream's feature gate of that name (beta
	// and on in 1.37, `WatchListCompression`, k8s.io/apiserver@v0.37.0/pkg/features/kube_features.go:495-497):
	// a watch-list whose request accepts gzip is answered gzip
	// (compression.go).
	WatchListCompression bool
}

// IsWebSocketRequest reports whether req asks to upgrade to a websocket,
// as wsstream.IsWebSocketRequest does: Connection: Upgrade and Upgrade: websocket.
func IsWebSocketRequest(req *http.Request) bool {
	return headerHas(req.Header, "Connection", "upgrade") && strings.EqualFold(req.Header.Get("Upgrade"), "websocket")
}

func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, part := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}

// ServeHTTP picks the transport: websocket for an upgrade request, a
// streamed HTTP response otherwise.
func (s *WatchServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if IsWebSocketRequest(req) {
		// websocket.Server with no Handshake accepts any Origin; the
		// default websocket.Handler would insist on one. The Origin check
		// protects cookie-authenticated browsers from other sites' pages;
		// here the bearer token has already authenticated the request.
		websocket.Server{Handler: s.HandleWS}.ServeHTTP(w, req)
		return
	}
	s.HandleHTTP(w, req)
}

// timeoutCh is realTimeoutFactory.TimeoutCh: a channel that fires after
// Timeout, or never.
func (s *WatchServer) timeoutCh() (<-chan time.Time, func() bool) {
	if s.Timeout <= 0 {
		return nil, func() bool { return false }
	}
	t := time.NewTimer(s.Timeout)
	return t.C, t.Stop
}

// HandleHTTP streams frames over one HTTP response. On HTTP/1.1 the
// response has no Content-Length, so net/http sends it chunked: each Flush
// ends the chunks written so far. On HTTP/2 the same writes become DATA
// frames on the request's stream; there is no chunked encoding, and the
// Transfer-Encoding header we set is dropped by the HTTP/2 server.
func (s *WatchServer) HandleHTTP(w http.ResponseWriter, req *http.Request) {
	defer s.Watching.Stop()
	flusher, ok := w.(http.Flusher)
	if !ok {
		// A ResponseWriter wrapper that hides Flush would turn a watch into
		// a response that never arrives. Upstream answers 500 the same way
		// (`HandleHTTP`, k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/watch.go:362-383).
		writeInternalError(w, "unable to start watch - can't get http.Flusher")
		return
	}
	timeout, stopTimer := s.timeoutCh()
	defer stopTimer()

	// A watch-list that accepts gzip is written gzip, anything else plain
	// (compression.go). Close ends a gzip member left open when we return.
	rw := newWatchResponseWriter(w, flusher, ContentEncodingSupported(req, s.WatchListCompression), s.IsWatchListRequest)
	defer rw.Close()

	// Headers go out at once, before the first event: a client knows the
	// watch is established even if nothing changes for minutes.
	rw.BeginStream(s.MediaType)

	encoder := newWatchEncoder(s.Encoder)
	events := s.Watching.ResultChan()
	done := req.Context().Done()
	for {
		select {
		case <-s.ShuttingDown:
			return
		case <-done:
			// The client closed the connection (or the HTTP/2 stream).
			return
		case <-timeout:
			// Returning ends the response normally: the last chunk (or
			// END_STREAM) tells the client the watch is over, not broken.
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if err := encoder.Encode(ev, rw); err != nil {
				return // the client went away mid-write, or the object cannot be encoded
			}
			// Flush only when nothing else is already waiting (flush.go).
			if flushNow(events) {
				if err := rw.Flush(); err != nil {
					return
				}
			}
			// The initial events are over: flush again, so a gzip member
			// ends with them and the idle watch holds no gzip writer
			// (a no-op if the flush above already did it). Upstream does
			// this where it records the watch-list latency
			// (`isWatchListLatencyRecordingRequired`, k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/watch.go:458-478).
			if isInitialEventsEnd(ev) {
				if err := rw.Flush(); err != nil {
					return
				}
			}
		}
	}
}

// isInitialEventsEnd reports whether ev is the BOOKMARK that ends a
// watch-list's initial events (upstream: shouldRecordWatchListLatency).
func isInitialEventsEnd(ev watch.Event) bool {
	if ev.Type != watch.Bookmark {
		return false
	}
	end, err := storage.HasInitialEventsEndBookmarkAnnotation(ev.Object)
	return err == nil && end
}

// HandleWS streams frames over a websocket, one message per event, as
// upstream's HandleWS does for clients that cannot read a streamed HTTP body
// (browsers' JavaScript, mostly). kubectl proxy users do not need it: the
// proxy relays the chunked stream as it is (lab 01's proxy scenario). A
// websocket message is its own frame, so no flushing is involved; the client
// speaks only to close.
func (s *WatchServer) HandleWS(ws *websocket.Conn) {
	defer s.Watching.Stop()
	defer ws.Close()
	timeout, stopTimer := s.timeoutCh()
	defer stopTimer()

	// The client must not send anything; reading tells us when it closes.
	clientGone := make(chan struct{})
	go func() {
		defer close(clientGone)
		var ignored []byte
		for websocket.Message.Receive(ws, &ignored) == nil {
		}
	}()
	// ws.Close above unblocks that reader, so it never outlives us; wait for
	// it so a test's goroutine check sees it gone.
	defer func() { ws.Close(); <-clientGone }()

	// Text frames: our payload is JSON. Each Write is one message.
	ws.PayloadType = websocket.TextFrame
	encoder := newWatchEncoder(s.Encoder)
	var message bytes.Buffer
	events := s.Watching.ResultChan()
	for {
		select {
		case <-s.ShuttingDown:
			return
		case <-clientGone:
			return
		case <-timeout:
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			// One Write is one message. The trailing newline stays, as in
			// upstream's websocket framer.
			message.Reset()
			if err := encoder.Encode(ev, &message); err != nil {
				return
			}
			if _, err := ws.Write(message.Bytes()); err != nil {
				return
			}
		}
	}
}

// writeInternalError answers a 500 Status before the stream has started.
func writeInternalError(w http.ResponseWriter, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	json.NewEncoder(w).Encode(map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": message, "reason": "InternalError", "code": http.StatusInternalServerError,
	})
}
