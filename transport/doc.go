// Package transport holds the app-server's network listeners: the --listen URL parser, the WebSocket
// endpoint served over TCP (ws://IP:PORT) and over a Unix socket (unix://[PATH]), the WebSocket
// authentication modes, and the stdio proxy to a Unix control socket. Every accepted connection is handed
// to a ConnServer as a line-oriented reader/writer pair, so the server cannot tell transports apart.
package transport
