# llmserve — build, test and run targets. `make run` and `make test` need only
# Go (and node/npm for the end-to-end API test).
GO      ?= go
BIN     ?= bin/llmserve
MODEL   ?=
PORT    ?= 8080
SHARED  ?= ../shared

.PHONY: build test test-short run bench-cpu bench-http bench-serve fuzz vet clean check-cuda e2e fault

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

# check-cuda compiles every cuda-tagged package and test (needs the CUDA
# toolkit's headers and libcuda, not a GPU), checks that the committed
# kernel binaries match kernels/*.cu, and that a cuda-built binary without
# a GPU falls back to the CPU.
check-cuda:
	$(GO) vet -tags cuda ./...
	scripts/gpu-fatbin-check.sh
	scripts/gpu-fallback-check.sh

# bench-http compares streamed tokens/s through HTTP with the engine's own.
bench-http:
	scripts/bench-http.sh

# fault builds the binary and drives it under load and faults on
# ../shared/models/stories260K.gguf (also part of make test).
fault:
	$(GO) test -count=1 -v ./test/fault

# bench-serve loads a running OpenAI-compatible server at URL (ARGS: more
# bench-serve flags, e.g. ARGS="-c 64 -r 8 --ignore-eos").
URL     ?= http://127.0.0.1:$(PORT)
ARGS    ?=
bench-serve: build
	$(BIN) bench-serve --url $(URL) $(ARGS)

# e2e serves ../shared/models/stories260K.gguf and drives it with curl and the
# official openai npm client (also part of make test).
e2e:
	scripts/e2e.sh

# Each fuzz target in turn, on one worker (FUZZTIME each; crashers land in
# the package's testdata/fuzz and become regression tests).
FUZZTIME ?= 60s
fuzz:
	$(GO) test ./gguf -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 1
	$(GO) test ./model -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 1
	$(GO) test ./model -run '^$$' -fuzz '^FuzzLoadHeader$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 1
	$(GO) test ./model/tokenizer -run '^$$' -fuzz '^FuzzEncode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 1
	$(GO) test ./model/tokenizer -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 1
	$(GO) test ./decode -run '^$$' -fuzz '^FuzzSampler$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 1
	$(GO) test ./httpapi -run '^$$' -fuzz '^FuzzRequestDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 1
	$(GO) test ./model/chat -run '^$$' -fuzz '^FuzzSharedTemplates$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 1
	$(GO) test ./model/chat -run '^$$' -fuzz '^FuzzRendererSource$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 1
	$(GO) test ./grammar -run '^$$' -fuzz '^FuzzParseGBNF$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 1
	$(GO) test ./grammar -run '^$$' -fuzz '^FuzzSchemaGBNF$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 1

clean:
	rm -rf bin

# CUDA path (build tag cuda). `make kernels` recompiles kernels/*.cu into the
# embedded kernels/fatbin (needs nvcc: ../shared/tools/install-cuda-toolkit.sh).
# `make test-cuda` checks the fat binaries are fresh, builds the cuda test
# binaries into .gpu/ and, where a GPU is present, runs them; it ends with
# "N passed, N failed".
# `make gpu-bundle` packs the cuda test binaries, llmserve and the shared
# data into .gpu/ for a GPU machine without Go (scripts/gpu-bundle.sh).
.PHONY: kernels test-cuda gpu-bundle
gpu-bundle:
	bash scripts/gpu-bundle.sh

kernels:
	bash scripts/gpu-fatbin.sh

test-cuda:
	bash scripts/gpu-fatbin-check.sh
	bash scripts/gpu-test.sh
