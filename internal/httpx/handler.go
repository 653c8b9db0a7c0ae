package httpx

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/ompgo/omp/pkg/vault"
)

// statusByCode is THE table mapping vault error codes to HTTP statuses.
var statusByCode = map[string]int{
	vault.EINVALID:      http.StatusBadRequest,
	vault.EUNAUTHORIZED: http.StatusUnauthorized,
	vault.ENOTFOUND:     http.StatusNotFound,
	vault.ECONFLICT:     http.StatusConflict,
	vault.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	vault.EUPSTREAM:     http.StatusBadGateway,
	vault.EUNAVAILABLE:  http.StatusServiceUnavailable,
	vault.EINTERNAL:     http.StatusInternalServerError,
}

// Status returns the HTTP status for err's vault error code (500 for any
// error that is not a *vault.Error, 200 for nil).
func Status(err error) int {
	if err == nil {
		return http.StatusOK
	}
	if s, ok := statusByCode[vault.ErrorCode(err)]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// CodeForStatus is the inverse of the table: the vault error code a client
// attaches to an HTTP error status (EINTERNAL for statuses not in the table).
func CodeForStatus(status int) string {
	for code, s := range statusByCode {
		if s == status && code != vault.EINTERNAL {
			return code
		}
	}
	return vault.EINTERNAL
}

// HandlerFunc is an HTTP handler that reports failure by returning an error;
// Adapter renders it. A handler that has already started its response must
// return nil (or an error, which is then only logged).
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Adapter turns HandlerFuncs into http.Handlers. The zero value is usable.
type Adapter struct {
	// Logger receives the crash line for unknown errors and panics; default
	// slog.Default().
	Logger *slog.Logger
	// CrashMessage is the log message for unknown errors and panics, e.g.
	// "auth-broker handler crashed"; default "handler crashed".
	CrashMessage string
}

// Handler adapts h. Errors become {"error": vault.ErrorMessage(err)} with the
// status of the table; errors that are not *vault.Error (and panics) become
// 500 {"error":"internal error"} and are logged with their real text. A
// panic never sends a stack trace to the client.
func (a Adapter) Handler(h HandlerFunc) http.Handler {
	// The closure's frame stays small (the work is in recoverPanic and
	// Error): long-lived streaming handlers park with it on their stack.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := Wrap(w)
		defer a.recoverPanic(sw, r)
		if err := h(sw, r); err != nil {
			a.Error(sw, r, err)
		}
	})
}

func (a Adapter) recoverPanic(sw *StatusWriter, r *http.Request) {
	p := recover()
	if p == nil {
		return
	}
	if p == http.ErrAbortHandler { //nolint:errorlint // sentinel panic value
		panic(p)
	}
	a.crash(r, errors.New("panic: "+panicText(p)))
	if sw.Written {
		panic(http.ErrAbortHandler) // cannot report it in a started response: drop the connection
	}
	WriteError(sw, http.StatusInternalServerError, "internal error")
}

// Error renders err as the JSON error envelope (or only logs it when the
// response has already started).
//
//go:noinline
func (a Adapter) Error(w http.ResponseWriter, r *http.Request, err error) {
	var ve *vault.Error
	if !errors.As(err, &ve) || ve.Message == "" {
		a.crash(r, err)
	}
	if sw, ok := w.(*StatusWriter); ok && sw.Written {
		return
	}
	WriteError(w, Status(err), vault.ErrorMessage(err))
}

func (a Adapter) crash(r *http.Request, err error) {
	log := a.Logger
	if log == nil {
		log = slog.Default()
	}
	msg := a.CrashMessage
	if msg == "" {
		msg = "handler crashed"
	}
	log.Error(msg, "method", r.Method, "path", r.URL.EscapedPath(), "error", err.Error())
}

func panicText(p any) string {
	switch v := p.(type) {
	case error:
		return v.Error()
	case string:
		return v
	}
	return "non-error panic value"
}

// WriteJSON writes v as compact JSON with the given status and
// Content-Type: application/json.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return WriteJSONBytes(w, status, b)
}

// WriteJSONBytes writes an already encoded JSON body.
func WriteJSONBytes(w http.ResponseWriter, status int, body []byte) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}

// WriteError writes the error envelope {"error": msg}.
func WriteError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	_ = WriteJSONBytes(w, status, b)
}

// StatusWriter wraps a ResponseWriter and records the status it sent. It
// implements Unwrap, so http.ResponseController still reaches the
// underlying connection (flush, deadlines).
type StatusWriter struct {
	http.ResponseWriter
	Status  int  // status sent, 0 until WriteHeader or Write
	Written bool // headers have been sent
}

// Wrap returns w as a *StatusWriter, wrapping it only once.
func Wrap(w http.ResponseWriter) *StatusWriter {
	if sw, ok := w.(*StatusWriter); ok {
		return sw
	}
	return &StatusWriter{ResponseWriter: w}
}

// WriteHeader records the status (1xx informational headers excluded).
func (s *StatusWriter) WriteHeader(code int) {
	if !s.Written && code >= 200 {
		s.Status, s.Written = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200.
func (s *StatusWriter) Write(b []byte) (int, error) {
	if !s.Written {
		s.Status, s.Written = http.StatusOK, true
	}
	return s.ResponseWriter.Write(b)
}

// Flush flushes the underlying writer when it supports it.
func (s *StatusWriter) Flush() {
	if !s.Written {
		s.Status, s.Written = http.StatusOK, true
	}
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// Unwrap returns the wrapped writer (for http.ResponseController).
func (s *StatusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
