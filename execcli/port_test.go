package execcli_test

import "net"

// closedLoopbackPort returns 127.0.0.1:<port> of a listener that was opened and closed again.
func closedLoopbackPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}
