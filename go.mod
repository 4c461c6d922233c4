module llmserve

go 1.26.8

require (
	github.com/ardanlabs/jinja v1.8.0
	github.com/chromedp/cdproto v0.159.0
	github.com/chromedp/chromedp v0.23.0
	github.com/go-chi/chi/v5 v5.2.3
	github.com/google/uuid v1.6.0
	github.com/mattn/go-isatty v0.0.20
	github.com/rs/zerolog v1.34.0
	golang.org/x/sys v0.43.0
	gorgonia.org/cu v0.9.6
)

require (
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/pkg/errors v0.9.1 // indirect
)
