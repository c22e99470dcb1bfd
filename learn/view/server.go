package main

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

//go:embed page
var pageFS embed.FS

// updateInterval: state updates are coalesced, so a burst of writes
// cannot flood the browser.
const updateInterval = 100 * time.Millisecond

// hub builds one snapshot per interval while anyone listens and hands it to
// every listener; a listener that has not taken the last one gets only the
// newest.
type hub struct {
	stack *Stack
	mu    sync.Mutex
	subs  map[chan []byte]struct{}
}

func (h *hub) subscribe() (chan []byte, func()) {
	ch := make(chan []byte, 1)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

func (h *hub) run(ctx context.Context) {
	t := time.NewTicker(updateInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		n := len(h.subs)
		h.mu.Unlock()
		if n == 0 {
			continue
		}
		b, err := json.Marshal(h.stack.snapshot(ctx))
		if err != nil {
			continue
		}
		h.mu.Lock()
		for ch := range h.subs {
			select {
			case <-ch: // drop the one not taken
			default:
			}
			ch <- b
		}
		h.mu.Unlock()
	}
}

// newHandler serves the page, its state stream and the actions.
func newHandler(ctx context.Context, s *Stack, addr string) http.Handler {
	h := &hub{stack: s, subs: map[chan []byte]struct{}{}}
	go h.run(ctx)
	mux := http.NewServeMux()
	page, _ := fs.Sub(pageFS, "page")
	mux.Handle("GET /", http.FileServerFS(page))
	mux.HandleFunc("GET /api/state", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s.snapshot(r.Context()))
	})
	mux.HandleFunc("GET /api/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		rc := http.NewResponseController(w)
		ch, unsubscribe := h.subscribe()
		defer unsubscribe()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-ctx.Done():
				return
			case b := <-ch:
				if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
					return
				}
				if rc.Flush() != nil {
					return
				}
			}
		}
	})
	mux.HandleFunc("POST /api/action", func(w http.ResponseWriter, r *http.Request) {
		msg, err := act(r.Context(), s, r)
		w.Header().Set("Content-Type", "application/json")
		res := map[string]any{"ok": err == nil, "message": msg}
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			res["message"] = err.Error()
		}
		json.NewEncoder(w).Encode(res)
	})
	return guard(addr, mux)
}

// guard answers only requests addressed to this server by its own address,
// and actions only from the page itself (it sends X-Lab-View, which another
// site's page cannot send without a CORS preflight this server refuses).
func guard(addr string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != addr {
			http.Error(w, "view: wrong Host "+strconv.Quote(r.Host)+"; open http://"+addr+"/", http.StatusMisdirectedRequest)
			return
		}
		if r.Method == http.MethodPost && r.Header.Get("X-Lab-View") != "1" {
			http.Error(w, "view: actions come from the page", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// act runs one action of the page.
func act(ctx context.Context, s *Stack, r *http.Request) (string, error) {
	q := r.URL.Query()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var msg string
	var err error
	switch do := q.Get("do"); do {
	case "create":
		var name string
		name, err = s.Create(ctx)
		msg = "created " + name
	case "update":
		var name string
		name, err = s.Update(ctx)
		msg = "updated " + name
	case "delete":
		var name string
		name, err = s.Delete(ctx)
		msg = "deleted " + name
	case "burst":
		n, convErr := strconv.Atoi(q.Get("n"))
		if convErr != nil || n < 1 || n > 10000 {
			return "", fmt.Errorf("burst: n=%q: want 1 to 10000", q.Get("n"))
		}
		var done int
		done, err = s.Burst(ctx, n)
		msg = fmt.Sprintf("burst: %d of %d ConfigMaps created", done, n)
	case "watcher":
		var vw *viewWatcher
		if vw, err = s.AddWatcher(q.Get("kind")); err == nil {
			msg = fmt.Sprintf("watcher %d (%s): %s", vw.ID, vw.Kind, vw.Options)
		}
	case "stop-watcher":
		id, _ := strconv.Atoi(q.Get("id"))
		if err = s.StopWatcher(id); err == nil {
			msg = fmt.Sprintf("watcher %d stopped", id)
		}
	case "compact":
		var rev int64
		rev, err = s.Compact(ctx)
		msg = fmt.Sprintf("etcd compacted to revision %d", rev)
	case "restart":
		others, _ := strconv.Atoi(q.Get("others"))
		if others < 0 || others > 1000 {
			return "", fmt.Errorf("restart: others=%d: want 0 to 1000", others)
		}
		err = s.Restart(others)
		msg = "the API server, its Cachers and etcd restarted on the same data"
		if others > 0 {
			msg += fmt.Sprintf(", %d ConfigMaps written to etcd meanwhile", others)
		}
	default:
		return "", fmt.Errorf("unknown action %q", do)
	}
	if err != nil {
		s.log.add("action", q.Get("do")+": "+err.Error(), nil)
		return "", err
	}
	s.log.add("action", msg, nil)
	return msg, nil
}

// listen opens 127.0.0.1:port (0: a free one).
func listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("-listen %q: %w", addr, err)
	}
	if host != "127.0.0.1" {
		return nil, fmt.Errorf("-listen %q: only 127.0.0.1 is allowed: the page's actions write to the cluster", addr)
	}
	return net.Listen("tcp", addr)
}
