package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"llmserve/decode"
	"llmserve/model/chat"
)

// apiError is an error with its OpenAI-style HTTP form.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"` // string or null
	Code    any    `json:"code"`  // string or null
}

func (e *apiError) Error() string { return e.Message }

// invalid returns a 400 error about one request parameter.
func invalid(param, format string, args ...any) error {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param,
		Message: fmt.Sprintf(format, args...)}
}

// Errors the handlers return; toAPIError gives them their status.
var (
	errLoading      = errors.New("the model is still loading")
	errUnauthorized = errors.New("invalid or missing API key: send it as 'Authorization: Bearer KEY' or 'X-Api-Key: KEY'")
)

// Seconds a client is told to wait (Retry-After) before trying again.
const (
	retryBusy    = "1" // all slots and the queue are taken
	retryLoading = "5" // the model is loading
)

// unknownModel is a request for a model this server does not serve.
type unknownModel struct{ name, served string }

func (e unknownModel) Error() string {
	return fmt.Sprintf("the model %q does not exist; this server serves %q", e.name, e.served)
}

// toAPIError is the one place that maps an internal error to the status,
// type and code a client sees.
func toAPIError(err error) *apiError {
	var (
		api     *apiError
		syntax  *json.SyntaxError
		typ     *json.UnmarshalTypeError
		tooBig  *http.MaxBytesError
		readErr *bodyReadError
		prompt  *decode.PromptError
		unknown unknownModel
		render  *chat.RenderError
	)
	switch {
	case errors.As(err, &api):
		return api
	case errors.As(err, &render) && render.ClientFault():
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "messages", Code: "chat_template_rejected",
			Message: "the chat template refused the conversation: " + render.Msg}
	case errors.As(err, &render) && render.Kind != chat.ErrCanceled:
		// The template itself failed or passed a bound: the server's
		// (its operator's) fault, not the client's.
		return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "chat_template_error",
			Message: render.Error()}
	case errors.As(err, &tooBig):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
			Message: fmt.Sprintf("the request body is larger than the limit of %d bytes", tooBig.Limit)}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &apiError{Status: http.StatusRequestTimeout, Type: "invalid_request_error", Code: "request_timeout",
			Message: "the request body did not arrive in time"}
	case errors.As(err, &readErr):
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "bad_request_body",
			Message: readErr.Error()}
	case errors.Is(err, io.EOF):
		// json.Decoder found no value: the body is empty or blank.
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "empty_body",
			Message: "the request body is empty: it must be a JSON object"}
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: "malformed JSON in the request body: " + err.Error()}
	case errors.As(err, &typ):
		// Parameters shared by both endpoints sit in an embedded struct.
		field := strings.TrimPrefix(typ.Field, "genParams.")
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: field,
			Message: fmt.Sprintf("parameter %q must be %s, not a JSON %s", field, jsonKind(typ.Type.Kind().String()), typ.Value)}
	case errors.As(err, &prompt):
		code := any(nil)
		if prompt.Tokens >= prompt.Context {
			code = "context_length_exceeded"
		}
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "prompt", Code: code,
			Message: prompt.Msg}
	case errors.Is(err, decode.ErrInvalidSampling):
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: err.Error()}
	case errors.As(err, &unknown):
		return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
			Message: err.Error()}
	case errors.Is(err, errUnauthorized):
		return &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "invalid_api_key",
			Message: err.Error()}
	case errors.Is(err, decode.ErrQueueFull):
		return &apiError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "queue_full",
			Message: "the server is busy: all slots are taken and the queue is full; retry later"}
	case errors.Is(err, decode.ErrShuttingDown):
		return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "shutting_down",
			Message: "the server is shutting down"}
	case errors.Is(err, errLoading):
		return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "model_loading",
			Message: err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		return &apiError{Status: http.StatusGatewayTimeout, Type: "server_error", Code: "timeout",
			Message: "the request took longer than the server's time limit"}
	case errors.Is(err, decode.ErrInternal):
		return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "internal_error",
			Message: err.Error()}
	case errors.Is(err, context.Canceled):
		// The client is gone; the status is for the log only.
		return &apiError{Status: 499, Type: "server_error", Code: "cancelled", Message: "the request was cancelled"}
	}
	return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
}

// jsonKind names a Go kind the way a JSON user thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "int", "int32", "int64", "uint64", "uint32":
		return "an integer"
	case "float32", "float64":
		return "a number"
	}
	return "a " + kind
}

// errorBody is the JSON body of an error response or stream event.
type errorBody struct {
	Error *apiError `json:"error"`
}

// writeError sends err as an OpenAI-style error response.
func writeError(w http.ResponseWriter, err error) {
	e := toAPIError(err)
	if st := statsOf(w); st != nil {
		st.err = e.Message
	}
	switch {
	case e.Status == http.StatusTooManyRequests:
		w.Header().Set("Retry-After", retryBusy)
	case e.Code == "model_loading":
		w.Header().Set("Retry-After", retryLoading)
	}
	writeJSON(w, e.Status, errorBody{Error: e})
}

// writeJSON sends v with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

var errNotText = errors.New("must be a string or an array of text parts")
