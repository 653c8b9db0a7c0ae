package proxy

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/google"
)

// The Gemini API routes: POST /v1beta/models/{model}:{method} with the
// methods generateContent, streamGenerateContent and countTokens, and
// GET /v1beta/models[/{model}]. The model may be a bare id or
// "<provider>/<id>", as on the other routes. Every answer, errors
// included, has Google's shapes.

// geminiPrefix is the path prefix of the Gemini API routes.
const geminiPrefix = "/v1beta/"

// geminiRoutes registers the Gemini API routes on r.
func (s *Server) geminiRoutes(r chi.Router) {
	a := httpx.Adapter{Logger: s.log, CrashMessage: "auth-gateway handler crashed", Classify: problem, Render: renderGemini}
	r.Method(http.MethodGet, "/v1beta/models", a.Handler(s.geminiListModels))
	r.Method(http.MethodGet, "/v1beta/models/*", a.Handler(s.geminiGetModel))
	r.Method(http.MethodPost, "/v1beta/models/*", a.Handler(s.geminiCall))
}

// geminiCall dispatches POST /v1beta/models/{model}:{method}.
func (s *Server) geminiCall(w http.ResponseWriter, r *http.Request) error {
	rest, err := geminiRest(r)
	if err != nil {
		return err
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return errorf(http.StatusNotFound, "Method not found: expected /v1beta/models/{model}:generateContent, :streamGenerateContent or :countTokens")
	}
	model, method := rest[:i], rest[i+1:]
	switch method {
	case "generateContent":
		return s.serve(w, r, &call{f: geminiFormat, inflight: s.inflight, pathModel: model})
	case "streamGenerateContent":
		f := geminiArrayFormat
		if r.URL.Query().Get("alt") == "sse" {
			f = geminiFormat
		}
		return s.serve(w, r, &call{f: f, inflight: s.inflight, pathModel: model, pathStream: true})
	case "countTokens":
		return s.geminiCountTokens(w, r, model)
	}
	return errorf(http.StatusNotFound, "Method not found: "+method+" (the gateway serves generateContent, streamGenerateContent and countTokens)")
}

// geminiRest is the unescaped path after /v1beta/models/.
func geminiRest(r *http.Request) (string, error) {
	rest, err := url.PathUnescape(chi.URLParam(r, "*"))
	if err != nil {
		return "", errorf(http.StatusBadRequest, "Invalid model name in the path")
	}
	if rest == "" {
		return "", errorf(http.StatusNotFound, "A model name is required: /v1beta/models/{model}")
	}
	return rest, nil
}

// geminiCountTokens answers countTokens with an estimate: the gateway does
// not ask an upstream (not every upstream can count), it counts about four
// characters a token (google.CountTokens).
func (s *Server) geminiCountTokens(w http.ResponseWriter, r *http.Request, model string) error {
	if s.browser != nil && !isJSON(r.Header.Get("Content-Type")) {
		return &apiError{Status: http.StatusUnsupportedMediaType, Message: msgNotJSON}
	}
	c := &call{f: geminiFormat, inflight: s.inflight}
	defer c.recycle()
	body, err := s.readBody(w, r, c)
	if err != nil {
		return err
	}
	req, err := google.DecodeRequest(body)
	if err != nil {
		return err
	}
	if _, err := s.models.resolve(r.Context(), s, model); err != nil {
		return err
	}
	out, err := json.Marshal(struct {
		TotalTokens int64 `json:"totalTokens"`
	}{google.CountTokens(req)})
	if err != nil {
		return err
	}
	writeGeneric(w, http.StatusOK, out)
	return nil
}

// geminiModel is Google's Model resource.
type geminiModel struct {
	Name                       string   `json:"name"`
	BaseModelID                string   `json:"baseModelId"`
	Version                    string   `json:"version"`
	DisplayName                string   `json:"displayName"`
	InputTokenLimit            int      `json:"inputTokenLimit,omitempty"`
	OutputTokenLimit           int      `json:"outputTokenLimit,omitempty"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
	Thinking                   bool     `json:"thinking,omitempty"`
}

// geminiMethods are the generation methods every model supports here.
var geminiMethods = []string{"generateContent", "streamGenerateContent", "countTokens"}

// geminiModelOf is m as a Model resource named models/<provider>/<id>.
func geminiModelOf(m *llm.Model) geminiModel {
	name := m.Name
	if name == "" {
		name = m.ID
	}
	return geminiModel{
		Name: "models/" + m.Provider + "/" + m.ID, BaseModelID: m.ID, Version: "001", DisplayName: name,
		InputTokenLimit: m.ContextWindow, OutputTokenLimit: m.MaxTokens,
		SupportedGenerationMethods: geminiMethods, Thinking: m.Reasoning,
	}
}

// geminiListModels answers GET /v1beta/models: every routable model once,
// in catalog order, on one page.
func (s *Server) geminiListModels(w http.ResponseWriter, r *http.Request) error {
	t, err := s.models.current(r.Context(), s)
	if err != nil {
		return err
	}
	out := struct {
		Models []geminiModel `json:"models"`
	}{Models: make([]geminiModel, 0, len(t.models))}
	for i := range t.models {
		out.Models = append(out.Models, geminiModelOf(&t.models[i]))
	}
	body, err := json.Marshal(out)
	if err != nil {
		return err
	}
	writeGeneric(w, http.StatusOK, body)
	return nil
}

// geminiGetModel answers GET /v1beta/models/{model}.
func (s *Server) geminiGetModel(w http.ResponseWriter, r *http.Request) error {
	id, err := geminiRest(r)
	if err != nil {
		return err
	}
	m, err := s.models.resolve(r.Context(), s, id)
	if err != nil {
		return err
	}
	body, err := json.Marshal(geminiModelOf(m))
	if err != nil {
		return err
	}
	writeGeneric(w, http.StatusOK, body)
	return nil
}

// renderGemini writes Google's error envelope
// {"error":{"code","message","status"}}; an upstream 529 is 503.
func renderGemini(w http.ResponseWriter, _ *http.Request, p httpx.Problem) {
	status := google.ClientStatus(p.Status)
	writeError(w, status, "application/json; charset=UTF-8", google.AppendErrorBody(nil, status, p.Message))
}

// newGeminiResponseID returns a responseId for an upstream that reported none.
func newGeminiResponseID() string { return randomHex(12) }

// isGeminiPath reports whether the escaped path is a Gemini API route,
// whose auth failures and unknown routes answer in Google's shape.
func isGeminiPath(r *http.Request) bool {
	return strings.HasPrefix(r.URL.EscapedPath(), geminiPrefix)
}

// geminiKey is the gateway token as a Gemini client sends it: the
// x-goog-api-key header, or the key query parameter.
func geminiKey(r *http.Request) string {
	if k := r.Header.Get("x-goog-api-key"); k != "" {
		return k
	}
	return r.URL.Query().Get("key")
}
