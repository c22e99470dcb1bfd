package clusterstate

import (
	"fmt"
	"math/rand/v2"
	"net"
)

// Ports handed out by FreeLoopbackPort: below the kernel's range for
// outgoing connections (Linux 32768-60999, macOS 49152-65535), so no client
// connection can be given one of them between the moment the port is found
// free and the moment the server binds it.
const (
	lowPort  = 20000
	highPort = 32767
)

// FreeLoopbackPort returns a TCP port on 127.0.0.1 that nothing listens on
// now. The caller binds it later, so another listener could still take it in
// between; picking outside the outgoing-connection range makes that rare
// even on a machine running hundreds of connections (the test suite), where
// a port from the kernel's own choice (":0") was once taken by a client
// before etcd could bind it.
func FreeLoopbackPort() (int, error) {
	for range 200 {
		port := lowPort + rand.IntN(highPort-lowPort+1)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	// Everything tried is taken: let the kernel choose.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
