// Package stacksize holds Grow, which sizes a new goroutine's stack in one step.
package stacksize

// Grow grows the calling goroutine's stack to 16 KiB in one step (one copy of a shallow stack). A
// goroutine known to go about that deep (a request handler decoding params and encoding its answer, a
// turn encoding notifications, rollout lines and the model request) would otherwise start small and
// double several times, each time copying the stack and adjusting its frames.
//
//go:noinline
func Grow() {
	var buf [10 << 10]byte
	keep(buf[:])
}

//go:noinline
func keep([]byte) {}
