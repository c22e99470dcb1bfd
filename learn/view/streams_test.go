package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestStreamsCountGzipWatchList: a gzip watch-list (two members, one per
// flush, as lab 03's watchserver writes it) is counted in frames of its
// decompressed body and in bytes as sent; a plain watch as before.
func TestStreamsCountGzipWatchList(t *testing.T) {
	members := [][]string{
		{`{"type":"ADDED","object":{}}` + "\n", `{"type":"ADDED","object":{}}` + "\n"},
		{`{"type":"BOOKMARK","object":{}}` + "\n"},
	}
	var sent int
	s := newStreams()
	handler := s.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gz := r.URL.Query().Get("gzip") == "1"
		if gz {
			w.Header().Set("Content-Encoding", "gzip")
		}
		for _, m := range members {
			var b bytes.Buffer
			if gz {
				zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
				for _, f := range m {
					io.WriteString(zw, f)
				}
				zw.Close()
			} else {
				for _, f := range m {
					b.WriteString(f)
				}
			}
			n, _ := w.Write(b.Bytes())
			sent += n
			w.(http.Flusher).Flush()
		}
	}))
	for _, q := range []string{"watch=1&gzip=1", "watch=1"} {
		sent = 0
		handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/pods?"+q, nil))
		_, closed := s.snapshot()
		got := closed[len(closed)-1]
		if got.Frames != 3 || got.Flushes != 2 || got.Bytes != int64(sent) {
			t.Errorf("%s: frames %d, flushes %d, bytes %d; want 3, 2, %d", q, got.Frames, got.Flushes, got.Bytes, sent)
		}
	}
}
