package httpx

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// Problem is how a handler error is shown to the client. A Classify function
// turns errors into Problems; a Render function writes them in the
// service's error envelope.
type Problem struct {
	Status  int    // HTTP status; 0 means 500
	Message string // client-safe text
	// RetryAfter, when positive, is sent as a Retry-After header (whole
	// seconds, rounded up).
	RetryAfter time.Duration
	// Unexpected marks an error the client cannot act on (a bug, an
	// unclassified failure). The Adapter logs it with a fresh request id,
	// sends the id in an X-Request-Id header and replaces Message with
	// InternalMessage(id).
	Unexpected bool
	// RequestID is set by the Adapter for Unexpected problems, so a Render
	// function can also put it in a field of its own envelope.
	RequestID string
}

// Error is an HTTP error that needs no domain vocabulary, such as the body
// errors of ReadJSON. DefaultClassify shows it as its Status and Message.
type Error struct {
	Status  int
	Message string // client-safe
	Err     error  // cause, only logged
}

func (e *Error) Error() string {
	if e.Message == "" && e.Err != nil {
		return e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// DefaultClassify shows an *Error (anywhere in err's chain) with its status
// and message; every other error is an Unexpected 500.
func DefaultClassify(err error) Problem {
	var he *Error
	if errors.As(err, &he) && he.Message != "" {
		status := he.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		return Problem{Status: status, Message: he.Message}
	}
	return Problem{Status: http.StatusInternalServerError, Unexpected: true}
}

// InternalMessage is the client text of an Unexpected problem.
func InternalMessage(requestID string) string {
	return "internal error (request id " + requestID + ")"
}

// NewRequestID returns a fresh random request id (16 hex digits).
func NewRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// RenderJSON is the default Render: {"error": p.Message}.
func RenderJSON(w http.ResponseWriter, _ *http.Request, p Problem) {
	WriteError(w, p.Status, p.Message)
}

// HandlerFunc is an HTTP handler that reports failure by returning an error;
// Adapter renders it. A handler that has already started its response must
// return nil (or an error, which is then only logged).
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Adapter turns HandlerFuncs into http.Handlers. It owns the mechanics
// shared by every service (panic recovery, crash logging with a request id,
// Retry-After, not touching a started response); what an error means and
// how it looks on the wire belong to the service, through Classify and
// Render. The zero value is usable.
type Adapter struct {
	// Logger receives the crash line for unexpected errors and panics;
	// default slog.Default().
	Logger *slog.Logger
	// CrashMessage is the log message for unexpected errors and panics, e.g.
	// "auth-broker handler crashed"; default "handler crashed".
	CrashMessage string
	// Classify maps a handler error to its Problem; default DefaultClassify.
	Classify func(error) Problem
	// Render writes a Problem as the response (headers Retry-After and
	// X-Request-Id are already set); default RenderJSON ({"error": msg}).
	Render func(w http.ResponseWriter, r *http.Request, p Problem)
}

// Handler adapts h. A returned error is classified and rendered; an
// Unexpected one (and a panic) becomes 500 "internal error (request id
// <id>)" with header X-Request-Id: <id>, and is logged with its real text
// and the same id. A panic never sends a stack trace to the client.
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
	started := sw.Written
	a.Problem(sw, r, errors.New("panic: "+panicText(p)), Problem{Status: http.StatusInternalServerError, Unexpected: true})
	if started {
		panic(http.ErrAbortHandler) // cannot report it in a started response: drop the connection
	}
}

// Error classifies err and renders it (or only logs it, when unexpected,
// if the response has already started).
func (a Adapter) Error(w http.ResponseWriter, r *http.Request, err error) {
	classify := a.Classify
	if classify == nil {
		classify = DefaultClassify
	}
	a.Problem(w, r, err, classify(err))
}

// Problem renders p for err (err is only logged, and only when p is
// Unexpected). Nothing is written when the response has already started.
func (a Adapter) Problem(w http.ResponseWriter, r *http.Request, err error, p Problem) {
	if p.Status == 0 {
		p.Status = http.StatusInternalServerError
	}
	if p.Unexpected {
		if p.RequestID == "" {
			p.RequestID = NewRequestID()
		}
		p.Message = InternalMessage(p.RequestID)
		a.crash(r, err, p.RequestID)
	}
	if sw, ok := w.(*StatusWriter); ok && sw.Written {
		return
	}
	h := w.Header()
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((p.RetryAfter+time.Second-1)/time.Second), 10))
	}
	if p.RequestID != "" {
		h.Set("X-Request-Id", p.RequestID)
	}
	render := a.Render
	if render == nil {
		render = RenderJSON
	}
	render(w, r, p)
}

func (a Adapter) crash(r *http.Request, err error, requestID string) {
	log := a.Logger
	if log == nil {
		log = slog.Default()
	}
	msg := a.CrashMessage
	if msg == "" {
		msg = "handler crashed"
	}
	text := "<nil>"
	if err != nil {
		text = err.Error()
	}
	log.Error(msg, "method", Clip(r.Method, MaxLoggedMethod), "path", Clip(r.URL.EscapedPath(), MaxLoggedPath),
		"error", text, "requestId", requestID)
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
