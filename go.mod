module llmserve

go 1.26.8

require (
	github.com/ardanlabs/jinja v1.8.0
	github.com/go-chi/chi/v5 v5.2.3
	github.com/google/uuid v1.6.0
	github.com/mattn/go-isatty v0.0.20
	github.com/rs/zerolog v1.34.0
	golang.org/x/sys v0.43.0
	gorgonia.org/cu v0.9.6
)

require (
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/pkg/errors v0.9.1 // indirect
)
