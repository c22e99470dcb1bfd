// Upstream: k8s.io/apimachinery@v0.37.0/pkg/watch/streamwatcher.go
// (StreamWatcher, its receive loop and Stop).
//
// Left out: the Reporter interface (we always report as client-go's
// rest.Request.Watch configures it, see streamBroken) and logging. Kept: which
// endings are silent and which are an ERROR event (see receive), the one
// goroutine per watch,
// the unbuffered result channel (a slow consumer slows the reading, which is
// how TCP flow control reaches back to the apiserver), and a Stop that ends
// the goroutine even when nobody reads the channel.

package listwatcher

import (
	"context"
	"errors"
	"io"
	"sync"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
)

// streamWatcher turns a Decoder into a watch.Interface: one goroutine
// decodes events and sends them on result until the stream ends, an error
// occurs, or Stop is called; then it closes result.
type streamWatcher struct {
	decoder *Decoder
	body    io.Closer
	ctx     context.Context    // the HTTP request's context
	cancel  context.CancelFunc // cancels it
	result  chan watch.Event
	// stopped is closed by Stop; it tells receive that the error it is about
	// to see (the body was closed under it) is ours, not the server's.
	stopped  chan struct{}
	stopOnce sync.Once
}

func newStreamWatcher(ctx context.Context, cancel context.CancelFunc, d *Decoder, body io.Closer) *streamWatcher {
	w := &streamWatcher{
		ctx:     ctx,
		decoder: d,
		body:    body,
		cancel:  cancel,
		result:  make(chan watch.Event),
		stopped: make(chan struct{}),
	}
	go w.receive()
	return w
}

// ResultChan is closed when the watch ends, whatever the reason.
func (w *streamWatcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch: the request is cancelled and the body closed, which
// unblocks a Decode in progress. Safe to call more than once.
func (w *streamWatcher) Stop() {
	w.stopOnce.Do(func() {
		close(w.stopped)
		w.cancel()
		w.body.Close()
	})
}

func (w *streamWatcher) receive() {
	defer close(w.result)
	defer w.Stop() // release the connection however we leave
	for {
		typ, obj, err := w.decoder.Decode()
		if err != nil {
			select {
			case <-w.stopped: // we closed the body ourselves
				return
			case <-w.ctx.Done(): // the caller's context ended: not the server's doing
				return
			default:
			}
			if isEndOfStream(err) {
				// As upstream: the channel just closes, whether the server
				// ended the watch (timeoutSeconds) or the connection broke.
				// The consumer cannot tell the two apart, and needs not:
				// either way it watches again from its last resourceVersion.
				return
			}
			// A frame that is not a watch event: an ERROR event first, so the
			// consumer knows the stream was bad, then the channel closes.
			select {
			case w.result <- watch.Event{Type: watch.Error, Object: streamBroken(err)}:
			case <-w.stopped:
			}
			return
		}
		select {
		case w.result <- watch.Event{Type: typ, Object: obj}:
		case <-w.stopped:
			return
		}
	}
}

// isEndOfStream reports whether err ends a watch silently, as upstream's
// `StreamWatcher.receive` decides (k8s.io/apimachinery@v0.37.0/pkg/watch/streamwatcher.go:109-124):
// the clean end of the body (io.EOF), a body cut inside a frame
// (io.ErrUnexpectedEOF), what k8s.io/apimachinery/pkg/util/net calls a
// probable EOF (connection reset, closed connection, HTTP/2 GOAWAY) and a
// timeout. Every other error is a stream we could not decode.
func isEndOfStream(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err)
}
