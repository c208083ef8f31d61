package jsonrpc

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"testing"
)

// laneOrderer puts every request in one lane when lane is set (as the server does for a thread's
// requests), or runs each at once.
type laneOrderer struct {
	*funcHandler
	lane string
}

func (o laneOrderer) Order(string, json.RawMessage) Order { return Order{Lane: o.lane} }

// BenchmarkRequestReachesHandler is the time from writing a request line into the connection's input pipe
// until its handler runs: the read, the decoding and the hand-off to the request's goroutine.
func BenchmarkRequestReachesHandler(b *testing.B) {
	for _, lane := range []string{"", "thread:1"} {
		name := "lane"
		if lane == "" {
			name = "nolane"
		}
		b.Run(name, func(b *testing.B) {
			pr, pw, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			started := make(chan struct{})
			h := laneOrderer{&funcHandler{req: func(context.Context, *Request) (any, error) {
				started <- struct{}{}
				return nil, nil
			}}, lane}
			c := NewConn(pr, io.Discard, h, Options{})
			done := make(chan error, 1)
			go func() { done <- c.Run(context.Background()) }()
			line := func(i int) []byte {
				return []byte(`{"id":` + strconv.Itoa(i) + `,"method":"turn/start","params":{"threadId":"1"}}` + "\n")
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := pw.Write(line(i)); err != nil {
					b.Fatal(err)
				}
				<-started
			}
			b.StopTimer()
			pw.Close()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			pr.Close()
		})
	}
}
