//go:build !exercise

// Upstream: k8s.io/client-go@v0.37.0/rest/watch/decoder.go (`Decoder.Decode`
// passes io.EOF on as the clean end, k8s.io/client-go@v0.37.0/rest/watch/decoder.go:47-52) and
// k8s.io/client-go@v0.37.0/tools/cache/reflector.go (a stream that breaks is
// a reason to watch again, not a failure of the informer: the
// `StreamWatcher` ends it silently, k8s.io/apimachinery@v0.37.0/pkg/watch/streamwatcher.go:109-121,
// and the Reflector, seeing `ResultChan` closed, returns no error,
// k8s.io/client-go@v0.37.0/tools/cache/reflector.go:1006-1009, so it calls
// `WatchWithContext` for the next one, k8s.io/client-go@v0.37.0/tools/cache/reflector.go:605).
//
// This is the solution of the exercise cut-off-stream (README: "Write it
// yourself"); stream_error_exercise.go is the stub built with -tags exercise.

package watchapi

import (
	"errors"
	"fmt"
	"io"
)

// streamError says what the decoder's error means for the watch:
//   - io.EOF between events: the server ended the stream on purpose
//     (timeoutSeconds, or it shut down); returned as io.EOF;
//   - the body ended inside an event (io.ErrUnexpectedEOF): the connection
//     broke; ErrCutOff, so a caller can watch again from the last RV seen;
//   - anything else: the bytes are not a JSON watch stream at all (a proxy's
//     HTML error page, say).
func streamError(err error) error {
	switch {
	case err == io.EOF:
		return io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return ErrCutOff
	default:
		return fmt.Errorf("watch stream: not a JSON event: %w", err)
	}
}
