# llmserve — build, test and run targets. `make run` and `make test` need only
# Go (and node/npm for the end-to-end API test).
GO      ?= go
BIN     ?= bin/llmserve
MODEL   ?=
PORT    ?= 8080
SHARED  ?= ../shared

.PHONY: build test test-short run bench-cpu fuzz vet clean

build:
	$(GO) build -o $(BIN) ./cmd/llmserve

test:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

test-short:
	$(GO) test -short ./...

vet:
	$(GO) vet ./...

# run serves MODEL, or a small synthetic model made on first use when MODEL
# is empty (random weights: its text is noise).
run: build
	@if [ -z "$(MODEL)" ]; then \
		mkdir -p models; \
		[ -f models/tiny-llama-Q8_0.gguf ] || $(BIN) synth --arch llama --shape tiny --type Q8_0 --seed 1 -o models/tiny-llama-Q8_0.gguf; \
		$(BIN) serve --model models/tiny-llama-Q8_0.gguf --port $(PORT); \
	else \
		$(BIN) serve --model $(MODEL) --port $(PORT); \
	fi

# bench-cpu measures pp512/tg128 on synthetic Llama-3.2-1B-shaped models (THREADS=2).
bench-cpu:
	scripts/bench-cpu.sh

fuzz:
	$(GO) test ./gguf -run '^$$' -fuzz FuzzParse -fuzztime 60s

clean:
	rm -rf bin
