package model_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// newHTTPServer starts a plain test server and returns its URL.
func newHTTPServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
