// Upstream: k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/watch.go
// (watchResponseWriter, plainResponseWriter, perFlushGzipWriter,
// watchGzipPool) and pkg/endpoints/handlers/responsewriters/compression.go
// (ContentEncodingSupported, NewGzipWriterPoolOrDie, gzipContentEncodingLevel).
// New in 1.37, behind the feature gate WatchListCompression (beta, on).
//
// A watch-list (sendInitialEvents=true with allowWatchBookmarks=true) whose
// request says Accept-Encoding: gzip is answered with Content-Encoding: gzip.
// The body is a series of gzip members, one per flush: each flush ends the
// member it wrote, so a client's gzip reader (which reads concatenated
// members as one stream) gets every event at once, and an idle watch keeps
// no compressor state: the gzip.Writer goes back to a pool between flushes.
// After the initial-events-end bookmark the handler flushes once more, so
// the initial state ends a member; the response stays gzip to its end (the
// header covers the whole body), and each later flush is a new member.
// Every other watch, and any request without gzip in Accept-Encoding, is
// written plain, as before 1.37.
//
// What we leave out: metrics; the gate is a field (WatchServer.
// WatchListCompression), not the process-wide DefaultFeatureGate.

package watchserver

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"
)

// gzipLevel is upstream's gzipContentEncodingLevel: level 1, the least CPU,
// with ratios close to the higher levels (kubernetes/kubernetes#112296).
const gzipLevel = 1

// gzipPool is watchGzipPool: writers are reused across flushes and watches.
var gzipPool = sync.Pool{New: func() any {
	gw, err := gzip.NewWriterLevel(nil, gzipLevel)
	if err != nil {
		panic(err)
	}
	return gw
}}

// ContentEncodingSupported is upstream's: "gzip" if the request's
// Accept-Encoding lists the token gzip and the gate is on, "" otherwise.
// As upstream, the token must be exactly "gzip": "gzip;q=0.5" is not
// recognised.
func ContentEncodingSupported(req *http.Request, gateEnabled bool) string {
	encoding := req.Header.Get("Accept-Encoding")
	if encoding == "" || !gateEnabled {
		return ""
	}
	for _, token := range strings.Split(encoding, ",") {
		if strings.TrimSpace(token) == "gzip" {
			return "gzip"
		}
	}
	return ""
}

// watchStreamWriter is what HandleHTTP writes frames to.
type watchStreamWriter interface {
	io.WriteCloser
	Flush() error
}

// plainResponseWriter writes to the response as it is.
type plainResponseWriter struct {
	w       http.ResponseWriter
	flusher http.Flusher
}

func (p *plainResponseWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *plainResponseWriter) Flush() error                { p.flusher.Flush(); return nil }
func (p *plainResponseWriter) Close() error                { return nil }

// perFlushGzipWriter compresses into one gzip member per flush.
type perFlushGzipWriter struct {
	w       http.ResponseWriter
	flusher http.Flusher
	gw      *gzip.Writer // nil between flushes
}

// Write starts a member if none is open.
func (p *perFlushGzipWriter) Write(b []byte) (int, error) {
	if p.gw == nil {
		p.gw = gzipPool.Get().(*gzip.Writer)
		p.gw.Reset(p.w)
	}
	return p.gw.Write(b)
}

// Flush ends the open member (a sync flush, then the final block and the
// trailer) and sends it; with no member open it does nothing.
func (p *perFlushGzipWriter) Flush() error {
	if p.gw == nil {
		return nil
	}
	if err := p.gw.Flush(); err != nil {
		return err
	}
	err := p.Close()
	p.flusher.Flush()
	return err
}

// Close ends the open member and returns its writer to the pool.
func (p *perFlushGzipWriter) Close() error {
	if p.gw == nil {
		return nil
	}
	err := p.gw.Close()
	p.gw.Reset(nil)
	gzipPool.Put(p.gw)
	p.gw = nil
	return err
}

// watchResponseWriter is the response of one watch: plain, or gzip for a
// watch-list that accepts it (decided once, in BeginStream).
type watchResponseWriter struct {
	w               http.ResponseWriter
	flusher         http.Flusher
	contentEncoding string
	isWatchList     bool
	writer          watchStreamWriter
}

func newWatchResponseWriter(w http.ResponseWriter, flusher http.Flusher, contentEncoding string, isWatchList bool) *watchResponseWriter {
	return &watchResponseWriter{
		w: w, flusher: flusher, contentEncoding: contentEncoding, isWatchList: isWatchList,
		writer: &plainResponseWriter{w: w, flusher: flusher},
	}
}

// BeginStream sends the headers at once, before the first event: a client
// knows the watch is established even if nothing changes for minutes.
func (w *watchResponseWriter) BeginStream(mediaType string) {
	w.w.Header().Set("Content-Type", mediaType)
	w.w.Header().Set("Transfer-Encoding", "chunked")
	if w.contentEncoding == "gzip" && w.isWatchList {
		w.w.Header().Set("Content-Encoding", "gzip")
		w.w.Header().Add("Vary", "Accept-Encoding")
		w.writer = &perFlushGzipWriter{w: w.w, flusher: w.flusher}
	}
	w.w.WriteHeader(http.StatusOK)
	w.flusher.Flush() // the headers only: gzip applies to the body
}

func (w *watchResponseWriter) Write(b []byte) (int, error) { return w.writer.Write(b) }
func (w *watchResponseWriter) Flush() error                { return w.writer.Flush() }
func (w *watchResponseWriter) Close() error                { return w.writer.Close() }
