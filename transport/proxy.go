package transport

import (
	"context"
	"fmt"
	"io"
	"net"
)

// Proxy copies bytes between stdin/stdout and the control socket at path (the client speaks WebSocket
// through it, as to the socket itself) until either side closes or ctx ends.
func Proxy(ctx context.Context, path string, stdin io.Reader, stdout io.Writer) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return fmt.Errorf("failed to connect to socket at %s: %w", path, err)
	}
	defer conn.Close()
	up := make(chan error, 1)
	down := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, stdin)
		if uc, ok := conn.(*net.UnixConn); ok {
			_ = uc.CloseWrite()
		}
		up <- err
	}()
	go func() {
		_, err := io.Copy(stdout, conn)
		down <- err
	}()
	select {
	case err := <-down: // the server side ended: we are done whatever stdin does
		return err
	case <-ctx.Done():
		return nil
	case err := <-up:
		if err != nil {
			return err
		}
		select { // stdin ended: let the server finish answering
		case err := <-down:
			return err
		case <-ctx.Done():
			return nil
		}
	}
}
