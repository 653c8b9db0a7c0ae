package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/openai"
)

// The non-chat routes (embeddings, images, audio, rerank, videos,
// judgments) share the chat routes' credential choice (dispatch), observed
// usage, request ids, x-litellm-* headers and metrics labels. Their error
// envelope is {"error":{"code","type","message"}}.

// mediaRoutes registers the non-chat routes.
func (s *Server) mediaRoutes(r chi.Router) {
	a := httpx.Adapter{Logger: s.log, CrashMessage: "auth-gateway handler crashed", Classify: problem, Render: renderMedia}
	r.Method(http.MethodPost, "/v1/embeddings", a.Handler(s.embeddings))
	r.Method(http.MethodPost, "/v1/images/generations", a.Handler(s.imageGenerations))
	r.Method(http.MethodPost, "/v1/images", a.Handler(s.imageGenerations))
	r.Method(http.MethodPost, "/v1/images/edits", a.Handler(s.imageEdits))
	r.Method(http.MethodPost, "/v1/audio/speech", a.Handler(s.speech))
	r.Method(http.MethodPost, "/v1/audio/transcriptions", a.Handler(s.transcriptions))
	r.Method(http.MethodPost, "/v1/rerank", a.Handler(s.rerank))
	r.Method(http.MethodPost, "/v1/videos", a.Handler(s.videoSubmit))
	r.Method(http.MethodGet, "/v1/videos/{id}", a.Handler(s.videoPoll))
	r.Method(http.MethodGet, "/v1/videos/{id}/content", a.Handler(s.videoContent))
	j := a
	j.Render = renderJudgment
	r.Method(http.MethodPost, "/v1/systemone", j.Handler(s.systemOne))
	r.Method(http.MethodPost, "/alpha/decisions", j.Handler(s.systemOne))
}

// Wire APIs of the non-chat models the gateway sends upstream.
const (
	apiEmbeddings       = "openai-embeddings"
	apiImages           = "openai-images"
	apiOpenRouterImages = "openrouter-images"
	apiSpeech           = "openai-speech"
	apiTranscriptions   = "openai-transcriptions"
)

// media is one non-chat request between its phases.
type media struct {
	format string // the log and metrics name ("embeddings")
	id     string // the request id
	start  time.Time
	model  *llm.Model // the model table's: read-only
	// clientID is the model id the client sent.
	clientID string
	credID   int64 // the credential that served
}

// beginMedia sets the request ids and the metrics format of a non-chat
// request.
func (s *Server) beginMedia(w http.ResponseWriter, r *http.Request, format string) *media {
	m := &media{format: format, start: s.now()}
	ids := []string{newRequestID()}
	m.id = ids[0]
	w.Header()[hdr.requestID], w.Header()[hdr.requestID2] = ids, ids
	info(r.Context()).format = format
	return m
}

// resolveMedia resolves the model id a non-chat request names and checks
// that one of apis serves it; otherwise the 400 says so with unsupported
// (the model id filled in).
func (s *Server) resolveMedia(r *http.Request, m *media, id string, apis []string, unsupported func(id string, model *llm.Model) string) error {
	model, err := s.models.resolve(r.Context(), s, id)
	if err != nil {
		return err
	}
	if !slices.Contains(apis, model.API) {
		return errorf(http.StatusBadRequest, unsupported(id, model))
	}
	m.model, m.clientID = model, id
	info(r.Context()).provider = model.Provider
	s.logMedia(r, m, id)
	return nil
}

// logMedia logs the resolved non-chat request.
func (s *Server) logMedia(r *http.Request, m *media, id string) {
	s.log.Info("auth-gateway request", "format", m.format, "model", id,
		"resolvedProvider", m.model.Provider, "resolvedModel", m.model.ID, "stream", false, httpx.Peer(r), "requestId", m.id)
}

// sendMedia sends the request newReq builds for each credential the
// ladder offers (the session key is the route and model, so a model's
// requests stay on one account) and returns the first 2xx response.
// newReq is called once per attempt: a body must be readable again.
func (s *Server) sendMedia(ctx context.Context, m *media, newReq func() (openai.MediaRequest, error)) (*http.Response, error) {
	opened := time.Now()
	var resp *http.Response
	credID, err := s.dispatch(ctx, m.model, m.format+"\x00"+m.model.Provider+"/"+m.model.ID, func(cred llm.Credential) error {
		req, err := newReq()
		if err != nil {
			return err
		}
		if c, ok := req.Body.(io.Closer); ok {
			defer c.Close()
		}
		req.Provider, req.Client, req.Now, req.Header = m.model.Provider, s.client, s.now, m.model.Headers
		resp, err = openai.Send(ctx, req, cred)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.metrics.ttfb.WithLabelValues(m.model.Provider).Observe(time.Since(opened).Seconds())
	m.credID = credID
	return resp, nil
}

// jsonRequest is a POST of a JSON body to url.
func jsonRequest(url string, body []byte) openai.MediaRequest {
	return openai.MediaRequest{URL: url, ContentType: "application/json", Body: bytes.NewReader(body), Length: int64(len(body))}
}

// mediaURL is the upstream endpoint path of m's model: the provider's base
// URL override, else the model's base, joined with path.
func (s *Server) mediaURL(m *media, path string) string {
	base := s.urls(m.model.Provider, "baseUrl")
	if base == "" {
		base = m.model.BaseURL
	}
	return openai.JoinURL(base, path)
}

// mediaHeaders sets the success headers of a non-chat answer: the model,
// its base and the time taken.
func (s *Server) mediaHeaders(w http.ResponseWriter, m *media) {
	h := w.Header()
	h[hdr.modelID] = []string{m.model.ID}
	if m.model.BaseURL != "" {
		h[hdr.modelAPIBase] = []string{m.model.BaseURL}
	}
	ms := []string{strconv.FormatInt(s.now().Sub(m.start).Milliseconds(), 10)}
	h[hdr.durationMs], h[hdr.processingMs] = ms, ms
	h["X-Content-Type-Options"] = hdr.nosniffValue
	h["Cache-Control"] = noStore
}

// noStore is the Cache-Control of the non-chat answers.
var noStore = []string{"no-store"}

// writeMediaJSON answers 200 with v as JSON.
func (s *Server) writeMediaJSON(w http.ResponseWriter, m *media, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.writeMediaBody(w, m, body)
}

// writeMediaBody answers 200 with a JSON body.
func (s *Server) writeMediaBody(w http.ResponseWriter, m *media, body []byte) error {
	s.mediaHeaders(w, m)
	h := w.Header()
	h["Content-Type"] = mediaJSONType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

var mediaJSONType = []string{"application/json; charset=utf-8"}

// maxMediaAnswer bounds a JSON answer read from upstream before it is
// re-encoded (embeddings of many long inputs run to tens of MB).
const maxMediaAnswer = 256 << 20

// readMediaAnswer decodes a 2xx JSON answer into v and closes it.
func readMediaAnswer(resp *http.Response, v any) error {
	b, err := readMediaBytes(resp)
	if err != nil {
		return err
	}
	defer httpx.PutBuffer(b) // json.Unmarshal copies what it keeps
	if err := json.Unmarshal(b, v); err != nil {
		return &apiError{Status: http.StatusBadGateway, Message: "Upstream answered invalid JSON", Err: err}
	}
	return nil
}

// readMediaBytes reads a 2xx answer (its first maxMediaAnswer bytes) into
// a recycled buffer and closes it; the caller hands the buffer back with
// httpx.PutBuffer when nothing views it any more. An answer of unknown
// length starts in the smallest pooled buffer.
func readMediaBytes(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	n := resp.ContentLength
	if n < 0 {
		n = httpx.MinPooled
	}
	b, err := readAllSized(io.LimitReader(resp.Body, maxMediaAnswer), n, maxMediaAnswer)
	if err != nil {
		httpx.PutBuffer(b)
		return nil, &apiError{Status: http.StatusBadGateway, Message: msgUpstream, Err: err}
	}
	return b, nil
}

// observeMedia hands a settled non-chat request's usage (tokens and
// cost) to Options.Observe.
func (s *Server) observeMedia(r *http.Request, m *media, u llm.Usage) {
	s.observe(r, m.model, m.credID, &llm.Message{Usage: u})
}

// mediaBodyError is the 413 text of a non-chat route's body limit.
func mediaBodyError(err error, limit string) error {
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusRequestEntityTooLarge {
		return &apiError{Status: http.StatusRequestEntityTooLarge, Message: "Request payload exceeds the " + limit + " limit", Err: err}
	}
	return err
}

// renderMedia writes the non-chat envelope {"error":{"code","type","message"}}.
func renderMedia(w http.ResponseWriter, _ *http.Request, p httpx.Problem) {
	status, typ := mediaErrorType(p.Status)
	body, _ := json.Marshal(map[string]any{"error": mediaError{Code: status, Type: typ, Message: p.Message}})
	w.Header()["Cache-Control"] = noStore
	writeError(w, status, "application/json; charset=utf-8", body)
}

// mediaErrorType is the status and error type of a problem's status on
// the non-chat routes.
func mediaErrorType(status int) (int, string) {
	switch {
	case status < 400 || status > 599:
		return http.StatusBadGateway, "upstream_error"
	case status == 401 || status == 403:
		return status, "authentication_error"
	case status == 429:
		return status, "rate_limit_error"
	case status == 499:
		return status, "request_aborted"
	case status < 500:
		return status, "invalid_request_error"
	}
	return status, "upstream_error"
}

type mediaError struct {
	Code    int    `json:"code"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// requireJSON is the 400 of a route that takes only JSON.
func requireJSON(r *http.Request) error {
	if !isJSON(r.Header.Get("Content-Type")) {
		return errorf(http.StatusBadRequest, "Content-Type must be application/json")
	}
	return nil
}

// isSet reports whether a raw member was present and not null.
func isSet(raw json.RawMessage) bool { return len(raw) > 0 && !bytes.Equal(raw, []byte("null")) }
