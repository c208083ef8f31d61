# The one test command (README, .ci/run): vet, format check, and every test with the race detector.
.PHONY: test run bench generate build

test:
	go vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	# The race runtime sleeps 1 s at every process exit (GORACE atexit_sleep_ms); the tests start their
	# own binary thousands of times (sandbox helper, actions), so the sleep is turned off.
	GORACE="atexit_sleep_ms=0 $$GORACE" go test -race -timeout 20m ./...

run:
	go run ./cmd/appserver

generate:
	go generate ./...

# The release build: static (no cgo, so no dynamic loader or libc at every start, and the pure-Go
# resolver and user lookup, like the reference's musl binary) and without symbol tables. Every
# sandboxed tool call starts this binary as its helper, so start-up cost counts (docs/benchmarks.md).
build:
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o appserver ./cmd/appserver
