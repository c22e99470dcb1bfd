package clusterstate

import (
	"fmt"
	"net"
	"testing"
)

// TestFreeLoopbackPortIsBindableAndOutsideTheEphemeralRange: the port can be
// bound on 127.0.0.1, and it lies where outgoing connections are never given
// a local port, so they cannot take it before the server binds it.
func TestFreeLoopbackPortIsBindableAndOutsideTheEphemeralRange(t *testing.T) {
	for range 20 {
		port, err := FreeLoopbackPort()
		if err != nil {
			t.Fatal(err)
		}
		if port < lowPort || port > highPort {
			t.Fatalf("port %d outside %d-%d", port, lowPort, highPort)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("port %d is not free: %v", port, err)
		}
		l.Close()
	}
}
