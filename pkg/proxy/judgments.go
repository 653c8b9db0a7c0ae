package proxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/openai"
)

// Wire APIs of the judge models.
const (
	apiTypeSafe            = "typesafe"
	apiOpenRouterDecisions = "openrouter-decisions"
)

// judgmentPath is the upstream path of a judge model's wire API.
func judgmentPath(api string) string {
	if api == apiOpenRouterDecisions {
		return "/decisions"
	}
	return "/v1/systemone"
}

// judgmentRequest is a System One judgment request: a state and named
// questions, each a noul (yes/no), choice or score question.
type judgmentRequest struct {
	Model     string                     `json:"model"`
	State     json.RawMessage            `json:"state"`
	Questions map[string]json.RawMessage `json:"questions"`
}

// judgmentAnswer is the upstream's answer, passed on with its usage.
type judgmentAnswer struct {
	Model   string                     `json:"model"`
	Answers map[string]json.RawMessage `json:"answers"`
	Usage   struct {
		InputTokens  int64    `json:"input_tokens"`
		OutputTokens int64    `json:"output_tokens"`
		Cost         *float64 `json:"cost,omitempty"`
	} `json:"usage"`
}

// systemOne answers POST /v1/systemone and its alias POST
// /alpha/decisions: judgments from a judge model. Its errors are
// {"error":{"type","message"}}; a request that does not fit the schema,
// or a model that does not judge, is 422.
func (s *Server) systemOne(w http.ResponseWriter, r *http.Request) error {
	m := s.beginMedia(w, r, "systemone")
	c := &call{inflight: s.inflight}
	defer c.recycle()
	body, err := s.readBody(w, r, c)
	if err != nil {
		return err
	}
	var req judgmentRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return errorf(http.StatusBadRequest, "Invalid JSON body: "+err.Error())
	}
	if msg := checkJudgment(&req); msg != "" {
		return errorf(http.StatusUnprocessableEntity, "systemone: "+msg)
	}
	if err := s.resolveMedia(r, m, req.Model, []string{apiTypeSafe, apiOpenRouterDecisions}, func(id string, _ *llm.Model) string {
		return "Model " + id + " does not answer System One judgments"
	}); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
			ae.Status = http.StatusUnprocessableEntity
		}
		return err
	}
	req.Model = m.model.WireID()
	out, err := json.Marshal(struct {
		State     json.RawMessage            `json:"state"`
		Model     string                     `json:"model"`
		Questions map[string]json.RawMessage `json:"questions"`
	}{req.State, req.Model, req.Questions})
	if err != nil {
		return err
	}
	c.recycle()
	resp, err := s.sendMedia(r.Context(), m, func() (openai.MediaRequest, error) {
		r := jsonRequest(s.mediaURL(m, judgmentPath(m.model.API)), out)
		r.Accept = "application/json"
		return r, nil
	})
	if err != nil {
		return err
	}
	var ans judgmentAnswer
	if err := readMediaAnswer(resp, &ans); err != nil {
		return err
	}
	for _, name := range sortedKeys(req.Questions) {
		want := questionType(req.Questions[name])
		if got := questionType(ans.Answers[name]); got != want {
			return &apiError{Status: http.StatusBadGateway,
				Message: m.model.Provider + "/" + m.model.ID + ` response is missing a "` + want + `" answer for question "` + name + `"`}
		}
	}
	u := llm.Usage{Input: ans.Usage.InputTokens, Output: ans.Usage.OutputTokens}.WithCost(m.model.Cost)
	if ans.Usage.Cost != nil {
		u.Cost.Total = *ans.Usage.Cost
	}
	s.observeMedia(r, m, u)
	ans.Usage.Cost = nil
	if u.Cost.Total > 0 {
		ans.Usage.Cost = &u.Cost.Total
	}
	return s.writeMediaJSON(w, m, ans)
}

// checkJudgment returns what is wrong with a judgment request, "" when
// nothing is.
func checkJudgment(req *judgmentRequest) string {
	if req.Model == "" {
		return "model must be a non-empty string"
	}
	if !isStringOrObject(req.State) {
		return "state must be a string or an object"
	}
	if req.Questions == nil {
		return "questions must be an object"
	}
	for _, name := range sortedKeys(req.Questions) {
		var q struct {
			Type         string          `json:"type"`
			Instructions json.RawMessage `json:"instructions"`
		}
		if json.Unmarshal(req.Questions[name], &q) != nil {
			return "questions." + name + " must be an object"
		}
		switch q.Type {
		case "noul", "choice", "score":
		default:
			return `questions.` + name + `.type must be "noul", "choice" or "score"`
		}
		if !isStringOrObject(q.Instructions) {
			return "questions." + name + ".instructions must be a string or an object"
		}
	}
	return ""
}

// isStringOrObject reports whether raw is a JSON string or object.
func isStringOrObject(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, map[string]any:
		return true
	}
	return false
}

// questionType is the "type" member of a question or answer.
func questionType(raw json.RawMessage) string {
	var v struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &v)
	return v.Type
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// renderJudgment writes the judgment routes' envelope
// {"error":{"type","message"}}.
func renderJudgment(w http.ResponseWriter, _ *http.Request, p httpx.Problem) {
	status, typ := mediaErrorType(p.Status)
	body, _ := json.Marshal(map[string]any{"error": struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}{typ, p.Message}})
	w.Header()["Cache-Control"] = noStore
	writeError(w, status, "application/json; charset=utf-8", body)
}
