module llmserve

go 1.26.8

require (
	github.com/ardanlabs/jinja v1.8.0
	golang.org/x/sys v0.43.0
	gorgonia.org/cu v0.9.6
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
)
