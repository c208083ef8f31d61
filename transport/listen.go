package transport

import (
	"fmt"
	"net/netip"
	"strings"
)

// Kind is the transport a --listen URL selects.
type Kind int

// The transports.
const (
	KindStdio Kind = iota
	KindUnix
	KindWebSocket
	KindOff
)

// Endpoint is a parsed --listen URL.
type Endpoint struct {
	Kind Kind
	// Addr is the IP:PORT of a ws:// endpoint.
	Addr netip.AddrPort
	// Path is the socket path of a unix:// endpoint; empty selects the default control socket.
	Path string
}

// ParseListen parses a --listen value: stdio://, stdio, unix://, unix://PATH, ws://IP:PORT or off.
func ParseListen(s string) (Endpoint, error) {
	switch {
	case s == "stdio://" || s == "stdio":
		return Endpoint{Kind: KindStdio}, nil
	case s == "off":
		return Endpoint{Kind: KindOff}, nil
	case strings.HasPrefix(s, "unix://"):
		return Endpoint{Kind: KindUnix, Path: strings.TrimPrefix(s, "unix://")}, nil
	case strings.HasPrefix(s, "ws://"):
		ap, err := netip.ParseAddrPort(strings.TrimPrefix(s, "ws://"))
		if err != nil {
			return Endpoint{}, fmt.Errorf("invalid websocket --listen URL `%s`; expected `ws://IP:PORT`", s)
		}
		return Endpoint{Kind: KindWebSocket, Addr: ap}, nil
	}
	return Endpoint{}, fmt.Errorf("unsupported --listen URL `%s`; expected `stdio://`, `unix://`, `unix://PATH`, `ws://IP:PORT`, or `off`", s)
}
