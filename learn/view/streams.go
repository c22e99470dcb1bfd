package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// streams counts every watch stream lab 03's WatchServer serves: frames
// (JSON watch events, each ending in a newline), flushes (the WatchServer
// flushes when no other event waits: watchserver/flush.go) and bytes, per
// client.
// It wraps the API server's handler (apiserver.Config.Wrap), so it sees the
// HTTP side only; what is inside each frame is the WatchServer's business.
type streams struct {
	mu     sync.Mutex
	seq    int
	open   map[int]*stream
	closed []StreamState // the last 20, oldest first
}

type stream struct {
	StreamState
	frames, flushes, bytes atomic.Int64
}

// StreamState is one watch stream, as the page shows it.
type StreamState struct {
	ID      int       `json:"id"`
	Client  string    `json:"client"`
	Path    string    `json:"path"`
	Started time.Time `json:"started"`
	Frames  int64     `json:"frames"`
	Flushes int64     `json:"flushes"`
	Bytes   int64     `json:"bytes"`
	EndedAt time.Time `json:"endedAt,omitzero"`
	Proto   string    `json:"proto"`
}

func newStreams() *streams { return &streams{open: map[int]*stream{}} }

func (s *streams) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("watch")
		if q != "true" && q != "1" {
			next.ServeHTTP(w, r)
			return
		}
		s.mu.Lock()
		s.seq++
		st := &stream{StreamState: StreamState{ID: s.seq, Client: r.UserAgent() + " " + r.RemoteAddr, Path: r.URL.RequestURI(), Started: time.Now(), Proto: r.Proto}}
		s.open[st.ID] = st
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.open, st.ID)
			done := st.state()
			done.EndedAt = time.Now()
			if len(s.closed) == 20 {
				s.closed = append(s.closed[:0], s.closed[1:]...)
			}
			s.closed = append(s.closed, done)
		}()
		cw := &countingWriter{ResponseWriter: w, st: st}
		defer cw.close()
		next.ServeHTTP(cw, r)
	})
}

func (st *stream) state() StreamState {
	s := st.StreamState
	s.Frames, s.Flushes, s.Bytes = st.frames.Load(), st.flushes.Load(), st.bytes.Load()
	return s
}

// snapshot returns the open streams and the last closed ones.
func (s *streams) snapshot() (open, closed []StreamState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.open {
		open = append(open, st.state())
	}
	return open, append([]StreamState(nil), s.closed...)
}

// countingWriter counts what the WatchServer writes and flushes. It keeps
// http.Flusher (the WatchServer flushes when no other event waits) and Unwrap (for
// http.ResponseController).
//
// A watch-list (sendInitialEvents=true with bookmarks) asked with
// Accept-Encoding: gzip, as Go's transport asks, is gzip on the wire since
// 1.37 (lab 03's watchserver/compression.go). Bytes are then the
// compressed bytes sent, and frames are counted in the decompressed body,
// which a goroutine reads from a pipe.
type countingWriter struct {
	http.ResponseWriter
	st     *stream
	gz     *io.PipeWriter // nil until a gzip body starts
	gzDone chan struct{}
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.gz == nil && c.Header().Get("Content-Encoding") == "gzip" {
		pr, pw := io.Pipe()
		c.gz, c.gzDone = pw, make(chan struct{})
		go c.countGzip(pr)
	}
	n, err := c.ResponseWriter.Write(p)
	c.st.bytes.Add(int64(n))
	if c.gz != nil {
		c.gz.Write(p[:n]) // the reader drains the pipe to its end, so this never blocks for good
	} else {
		c.st.frames.Add(int64(bytes.Count(p[:n], []byte{'\n'})))
	}
	return n, err
}

// countGzip counts the frames of a gzip body: concatenated members, one
// per flush, which gzip.Reader reads as one stream.
func (c *countingWriter) countGzip(pr *io.PipeReader) {
	defer close(c.gzDone)
	defer io.Copy(io.Discard, pr) // whatever is left after an error
	zr, err := gzip.NewReader(pr)
	if err != nil {
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := zr.Read(buf)
		c.st.frames.Add(int64(bytes.Count(buf[:n], []byte{'\n'})))
		if err != nil {
			return
		}
	}
}

// close ends the gzip counter, if there is one, and waits for it.
func (c *countingWriter) close() {
	if c.gz != nil {
		c.gz.Close()
		<-c.gzDone
	}
}

func (c *countingWriter) Flush() {
	c.st.flushes.Add(1)
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
