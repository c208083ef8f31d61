# The one test command (README, .ci/run): vet, format check, and every test with the race detector.
.PHONY: test run bench generate

test:
	go vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	go test -race -timeout 12m ./...

run:
	go run ./cmd/appserver

generate:
	go generate ./...
