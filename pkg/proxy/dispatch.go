package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/upstream"
	"github.com/ompgo/omp/pkg/vault/pick"
)

// inference returns the handler of one format route: the request flow
// described in the package doc.
func (s *Server) inference(f *format) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		return s.serve(w, r, &call{f: f, inflight: s.inflight})
	}
}

// serve runs one inference call.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, c *call) error {
	// The body is recycled once nothing views it: in openUpstream, as soon
	// as the upstream has the request, or here (nil by then is a no-op).
	defer c.recycle()
	if err := s.prepare(w, r, c); err != nil {
		return err
	}
	s.logRequest(r, c)
	stream, err := s.openUpstream(w, r, c)
	if err != nil {
		return err
	}
	defer stream.Close()
	if !c.req.Stream {
		return s.answerFinal(w, r, c, stream)
	}
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()
	if out := startStream(w, c.f); out != nil {
		s.observe(r, c.model, c.credID, s.writeStream(out, c.f, c.req, stream))
	}
	return nil
}

// call is one inference request between its phases.
type call struct {
	f *format
	// pathModel and pathStream are the model and stream flag of a route
	// that names them in the URL (Gemini), set when pathModel is not "".
	pathModel  string
	pathStream bool
	id         string // the request id
	start      time.Time
	body       []byte // recycled by recycle
	req        *llm.Request
	model      *llm.Model // the model table's: read-only
	sid        string
	// credID is the credential of the open upstream stream.
	credID int64
	// inflight is the gateway's in-flight byte count, of which the body
	// holds held bytes until recycle.
	inflight *inflight
	held     int64
}

// recycle releases the body: its pooled buffer, the decoded request's
// arrays and its share of the in-flight bytes.
func (c *call) recycle() {
	httpx.PutBuffer(c.body)
	c.body = nil
	if c.held > 0 {
		c.inflight.give(c.held)
		c.held = 0
	}
}

// prepare reads and decodes the request and resolves its model and
// session id.
func (s *Server) prepare(w http.ResponseWriter, r *http.Request, c *call) error {
	f := c.f
	c.start = s.now()
	ri := info(r.Context())
	ri.format = f.name
	// One value slice for both ids; the keys are canonical (no
	// Header.Set: see hdr).
	ids := []string{newRequestID()}
	c.id = ids[0]
	w.Header()[hdr.requestID], w.Header()[hdr.requestID2] = ids, ids

	if s.browser != nil && !isJSON(r.Header.Get("Content-Type")) {
		return &apiError{Status: http.StatusUnsupportedMediaType, Message: msgNotJSON}
	}
	body, err := s.readBody(w, r, c)
	if err != nil {
		return err
	}
	req, err := f.decode(body)
	if err != nil {
		return err
	}
	if c.pathModel != "" {
		req.Model, req.Stream = c.pathModel, c.pathStream
	}
	c.req = req
	if c.model, err = s.models.resolve(r.Context(), s, req.Model); err != nil {
		return err
	}
	if msg := notChat(c.model); msg != "" {
		return errorf(http.StatusBadRequest, msg)
	}
	ri.provider, ri.stream = c.model.Provider, req.Stream
	mergePassthrough(req, r.Header)
	// Cloned: the picker keeps it (sticky credential) past this request.
	c.sid = strings.Clone(sessionID(f, req, body, r.Header))
	req.SessionID = c.sid
	// Fallbacks an upstream taught this session apply to its later
	// requests, not to other sessions.
	req.Session = s.sessions.get(c.sid)
	if !given(req.PromptCacheKey) {
		req.PromptCacheKey = c.sid
	}
	if c.model.API == llm.APICodex {
		// The Codex backend rejects sampling controls.
		req.Temperature, req.TopP, req.TopK, req.StopSequences = nil, nil, nil, nil
	}
	return nil
}

// logRequest logs the prepared request.
//
// The record goes to the handler directly: Logger.Info would also capture
// the caller's program counter (runtime.Callers), which no handler here
// prints and which cost a quarter of the line.
func (s *Server) logRequest(r *http.Request, c *call) {
	h, ctx := s.log.Handler(), r.Context()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	rec := slog.NewRecord(time.Now(), slog.LevelInfo, "auth-gateway request", 0)
	rec.AddAttrs(slog.String("format", c.f.name), slog.String("model", c.req.Model),
		slog.String("resolvedProvider", c.model.Provider), slog.String("resolvedModel", c.model.ID),
		slog.Bool("stream", c.req.Stream), httpx.Peer(r), slog.String("requestId", c.id))
	_ = h.Handle(ctx, rec)
}

// openUpstream opens the upstream stream of the prepared request and sets
// the success headers; the caller closes the stream.
func (s *Server) openUpstream(w http.ResponseWriter, r *http.Request, c *call) (*llm.Stream, error) {
	req, model := c.req, c.model
	opened := time.Now()
	stream, credID, err := s.open(r.Context(), req, model, c.sid)
	if err != nil {
		return nil, err
	}
	s.metrics.ttfb.WithLabelValues(model.Provider).Observe(time.Since(opened).Seconds())
	c.credID = credID
	// The upstream has the request, and no Provider's stream keeps it;
	// the response phase reads only its model id and two flags. The
	// decoded request and the body go now rather than when a stream of
	// minutes ends: a long agent session's request pinned a 1 MiB pooled
	// buffer and its decoded conversation for the whole stream.
	c.req = &llm.Request{Model: req.Model, Stream: req.Stream, IncludeStreamingUsage: req.IncludeStreamingUsage}
	c.recycle()
	h := w.Header()
	h[hdr.modelID] = []string{model.ID}
	if model.BaseURL != "" {
		h[hdr.modelAPIBase] = []string{model.BaseURL}
	}
	return stream, nil
}

// answerFinal answers a non-streaming request from the stream.
func (s *Server) answerFinal(w http.ResponseWriter, r *http.Request, c *call, stream *llm.Stream) error {
	final, err := s.writeFinal(w, c.f, c.req, stream, c.start)
	s.observe(r, c.model, c.credID, final)
	return err
}

// hdr are the canonical forms of the response headers the inference
// routes set. They are assigned straight into the header map: Header.Set
// canonicalises a key net/http does not know into a fresh string and
// allocates a value slice, per header per request. A value slice may be
// shared (the two request ids, the two durations, the constant values):
// nothing modifies a header value in place, and each slice is full
// (len = cap), so an Add copies.
var hdr = struct {
	requestID, requestID2, modelID, modelAPIBase, responseCost, durationMs, processingMs string
	nosniffValue                                                                         []string
}{
	http.CanonicalHeaderKey("x-request-id"), http.CanonicalHeaderKey("request-id"),
	http.CanonicalHeaderKey("x-litellm-model-id"), http.CanonicalHeaderKey("x-litellm-model-api-base"),
	http.CanonicalHeaderKey("x-litellm-response-cost"), http.CanonicalHeaderKey("x-litellm-response-duration-ms"),
	http.CanonicalHeaderKey("openai-processing-ms"),
	[]string{"nosniff"},
}

// readBody reads the request body into c.body, at most s.bodyLimit bytes
// (else 413), holding its bytes in the gateway's in-flight count (c.held,
// given back with the buffer by c.recycle): a declared length is taken whole before anything is read,
// a body of unknown length as it is read. A body that does not fit is
// answered 503.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, c *call) ([]byte, error) {
	return s.readBodyLimit(w, r, c, s.bodyLimit)
}

// readBodyLimit is readBody with its own limit (a route's smaller one).
func (s *Server) readBodyLimit(w http.ResponseWriter, r *http.Request, c *call, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	limit = min(limit, s.bodyLimit)
	if r.ContentLength > limit {
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Message: msgBodyTooLarge}
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength > 0 {
		if !c.inflight.take(r.ContentLength) {
			return nil, errInFlightFull(c.inflight.limit)
		}
		c.held = r.ContentLength
	} else {
		body = &meteredBody{r: body, f: c.inflight, held: &c.held}
	}
	b, err := readAllSized(body, r.ContentLength, limit)
	c.body = b // recycled with the call, whatever the outcome
	if err != nil {
		var tooBig *http.MaxBytesError
		var ae *apiError
		var he *httpx.Error
		switch {
		case errors.As(err, &tooBig):
			return b, &apiError{Status: http.StatusRequestEntityTooLarge, Message: msgBodyTooLarge, Err: err}
		case errors.As(err, &ae):
			return b, err
		case errors.As(err, &he): // the body's own verdict, such as a read timeout (408)
			return b, he
		case r.Context().Err() != nil:
			return b, &apiError{Status: 499, Message: "client closed request", Err: err}
		}
		return b, &apiError{Status: http.StatusBadRequest, Message: "Invalid request body: " + err.Error(), Err: err}
	}
	return b, nil
}

// readAllSized is io.ReadAll into a recycled buffer (httpx.GetBuffer) sized from
// the declared Content-Length (capped at limit): a large body is read
// into one buffer instead of a doubling series of copies. Without a
// declared length it starts at the smallest class and grows. The body is
// decoded in place (the canonical request's strings view it), so it goes
// back to the pool only when the request is over, and nothing kept past
// the request may view it (the session id is cloned).
func readAllSized(r io.Reader, n, limit int64) ([]byte, error) {
	if n < 0 {
		n = 0
	}
	b := httpx.GetBuffer(int(min(n, limit)) + 1) // +1: EOF is seen without growing
	for {
		m, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than declared: grow as ReadAll does
		}
	}
}

// open picks a credential and opens the upstream stream through dispatch.
// A Provider fails before the first byte only by returning an error, so
// every retry is invisible to the client.
func (s *Server) open(ctx context.Context, req *llm.Request, model *llm.Model, sid string) (*llm.Stream, int64, error) {
	prov, err := s.provider(model)
	if err != nil {
		return nil, 0, err
	}
	var st *llm.Stream
	credID, err := s.dispatch(ctx, model, sid, func(cred llm.Credential) error {
		var err error
		st, err = prov.Stream(ctx, req, model, cred)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return st, credID, nil
}

// dispatch is the credential choice every route shares: it walks the retry
// ladder of model's provider for session sid, calling try with each
// credential in turn until one call succeeds, the ladder has no next
// credential for the failure (a usage limit or policy denial marks the
// account; a 401 re-mints it once) or ctx ends. try must not have sent
// anything to the client when it fails. It returns the id of the
// credential that served, or the last failure.
func (s *Server) dispatch(ctx context.Context, model *llm.Model, sid string, try func(llm.Credential) error) (int64, error) {
	lad := s.picker.Ladder(model.Provider, sid, model.ID)
	e, err := lad.First(ctx)
	if err != nil {
		if !errors.Is(err, pick.ErrNoCredential) {
			s.log.Warn("auth-gateway getApiKey threw", "provider", model.Provider, "error", err)
		}
		return 0, err
	}
	for {
		err := try(pick.CredentialOf(&e))
		if err == nil {
			return e.ID, nil
		}
		if ctx.Err() != nil {
			return 0, err
		}
		fail, retryAfter := ladderFailure(err, model.Provider, model.ID)
		next, ok, lerr := lad.Next(ctx, e, fail, retryAfter)
		if lerr != nil {
			s.log.Warn("auth-gateway getApiKey threw", "provider", model.Provider, "error", lerr)
			return 0, err
		}
		if !ok {
			return 0, err
		}
		s.log.Info("auth-gateway credential retry", "provider", model.Provider,
			"failed", e.ID, "next", next.ID, "status", llm.Classify(err).Status)
		e = next
	}
}

// ladderFailure classifies an upstream failure of a request of provider
// for modelID for the ladder: an account-policy
// denial blocks the account (for that model only when it names it) and
// rotates, ahead of the usage-limit reading of the same text; usage limits
// (and a 402 billing cap) rotate after marking the account; a 401 re-mints
// the same account once; any other 403 rotates; the rest stops. Codex's
// entitlement sentence naming another model stops: it is provider text
// that must neither block nor rotate.
func ladderFailure(err error, provider, modelID string) (pick.Failure, time.Duration) {
	switch llm.PolicyDenialOf(err, provider, modelID) {
	case llm.AccountPolicy:
		return pick.AccountPolicy, 0
	case llm.ModelPolicy:
		return pick.ModelPolicy, 0
	case llm.ForeignModelPolicy:
		if !llm.Classify(err).UsageLimit {
			return pick.NotRetryable, 0
		}
	}
	c := llm.Classify(err)
	var ue *llm.UpstreamError
	status, retryAfter := c.Status, time.Duration(0)
	if errors.As(err, &ue) {
		retryAfter = ue.RetryAfter
		if ue.Status != 0 {
			status = ue.Status
		}
	}
	switch {
	case c.UsageLimit || status == http.StatusPaymentRequired:
		return pick.UsageLimit, retryAfter
	case status == http.StatusUnauthorized:
		return pick.AuthFailure, 0
	case status == http.StatusForbidden:
		return pick.Rotate, 0
	}
	return pick.NotRetryable, 0
}

// provider returns the upstream Provider of a model's wire API, pointed at
// the base URL override when there is one.
func (s *Server) provider(m *llm.Model) (llm.Provider, error) {
	p, err := upstream.New(*m, upstream.Options{BaseURL: s.urls(m.Provider, "baseUrl"), Client: s.client, Now: s.now})
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "Model "+m.Provider+"/"+m.ID+" uses api "+m.API+", which the gateway does not serve")
	}
	return p, nil
}

// writeFinal awaits the terminal event of a non-streamed request and
// answers 200 with the format's JSON, or the error envelope.
// It returns the final message (for observed usage), nil when there was none.
func (s *Server) writeFinal(w http.ResponseWriter, f *format, req *llm.Request, st *llm.Stream, start time.Time) (*llm.Message, error) {
	var final *llm.Message
	var cause error
	var done bool
	for ev := range st.Events() {
		if ev.Type.IsTerminal() {
			final, cause, done = ev.Partial, ev.Err, ev.Type == llm.EventDone
			break
		}
	}
	if final == nil {
		return nil, &apiError{Status: http.StatusBadGateway, Message: msgUpstream, Err: llm.ErrTruncated}
	}
	if done {
		if body, ok := f.final(req, final, s.now()); ok {
			h := w.Header()
			h["Content-Type"] = f.jsonTypeValue
			h["X-Content-Type-Options"] = hdr.nosniffValue
			h["Content-Length"] = []string{strconv.Itoa(len(body))}
			// The reference's LiteLLM-style response headers.
			h[hdr.responseCost] = []string{strconv.FormatFloat(final.Usage.Cost.Total, 'f', -1, 64)}
			ms := []string{strconv.FormatInt(s.now().Sub(start).Milliseconds(), 10)}
			h[hdr.durationMs], h[hdr.processingMs] = ms, ms
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(body)
			return final, nil
		}
	}
	// Error envelopes carry none of the success headers.
	delete(w.Header(), hdr.modelID)
	delete(w.Header(), hdr.modelAPIBase)
	if final.StopReason == llm.StopAborted || errors.Is(cause, context.Canceled) {
		msg := final.ErrorMessage
		if msg == "" {
			msg = msgAborted
		}
		s.log.Info("auth-gateway non-streaming aborted", "format", f.name)
		return final, &apiError{Status: 499, Message: msg, Err: cause}
	}
	if cause == nil {
		msg := final.ErrorMessage
		if msg == "" {
			msg = msgUpstream
		}
		cause = errors.New(msg)
	}
	s.log.Warn("auth-gateway non-streaming failed", "format", f.name, "error", cause)
	return final, cause
}
