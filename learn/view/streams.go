package main

import (
	"bytes"
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
		next.ServeHTTP(&countingWriter{ResponseWriter: w, st: st}, r)
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
type countingWriter struct {
	http.ResponseWriter
	st *stream
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.st.bytes.Add(int64(n))
	c.st.frames.Add(int64(bytes.Count(p[:n], []byte{'\n'})))
	return n, err
}

func (c *countingWriter) Flush() {
	c.st.flushes.Add(1)
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
