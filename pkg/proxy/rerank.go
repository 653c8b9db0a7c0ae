package proxy

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/openai"
)

// apiRerank is the wire API of the rerank models (OpenRouter's).
const apiRerank = "openrouter-rerank"

// rerankLimit is the largest rerank request body (8 MiB).
const rerankLimit = 8 << 20

// rerankUpstream is the OpenRouter rerank request.
type rerankUpstream struct {
	Model           string   `json:"model"`
	Query           string   `json:"query"`
	Documents       []string `json:"documents"`
	TopN            int      `json:"top_n,omitempty"`
	ReturnDocuments *bool    `json:"return_documents,omitempty"`
}

// rerankText is a document as answered: {"text": …}.
type rerankText struct {
	Text string `json:"text"`
}

// rerank answers POST /v1/rerank (OpenRouter rerank wire).
func (s *Server) rerank(w http.ResponseWriter, r *http.Request) error {
	m := s.beginMedia(w, r, "rerank")
	if err := requireJSON(r); err != nil {
		return err
	}
	c := &call{inflight: s.inflight}
	defer c.recycle()
	body, err := s.readBodyLimit(w, r, c, rerankLimit)
	if err != nil {
		return mediaBodyError(err, "8 MiB")
	}
	up, err := decodeRerank(body)
	if err != nil {
		return err
	}
	if err := s.resolveMedia(r, m, up.Model, []string{apiRerank}, func(id string, _ *llm.Model) string {
		return "Model " + id + " does not support reranking"
	}); err != nil {
		return err
	}
	up.Model = m.model.WireID()
	out, err := json.Marshal(up)
	if err != nil {
		return err
	}
	c.recycle()
	resp, err := s.sendMedia(r.Context(), m, func() (openai.MediaRequest, error) {
		return jsonRequest(s.mediaURL(m, "/rerank"), out), nil
	})
	if err != nil {
		return err
	}
	var ans struct {
		Results []struct {
			Index          int             `json:"index"`
			RelevanceScore float64         `json:"relevance_score"`
			Document       json.RawMessage `json:"document"`
		} `json:"results"`
		Usage struct {
			TotalTokens int64    `json:"total_tokens"`
			Cost        *float64 `json:"cost"`
		} `json:"usage"`
	}
	if err := readMediaAnswer(resp, &ans); err != nil {
		return err
	}
	u := llm.Usage{Input: ans.Usage.TotalTokens}.WithCost(m.model.Cost)
	if ans.Usage.Cost != nil {
		u.Cost.Total = *ans.Usage.Cost
	}
	s.observeMedia(r, m, u)
	type result struct {
		Index          int         `json:"index"`
		RelevanceScore float64     `json:"relevance_score"`
		Document       *rerankText `json:"document,omitempty"`
	}
	type usage struct {
		TotalTokens int64   `json:"total_tokens"`
		Cost        float64 `json:"cost"`
	}
	v := struct {
		Model   string   `json:"model"`
		Results []result `json:"results"`
		Usage   usage    `json:"usage"`
	}{Model: m.clientID, Results: make([]result, 0, len(ans.Results)), Usage: usage{ans.Usage.TotalTokens, u.Cost.Total}}
	for _, res := range ans.Results {
		out := result{Index: res.Index, RelevanceScore: res.RelevanceScore}
		if up.ReturnDocuments != nil && *up.ReturnDocuments {
			if res.Index >= 0 && res.Index < len(up.Documents) {
				out.Document = &rerankText{up.Documents[res.Index]}
			} else if d := documentText(res.Document); d != nil {
				out.Document = d
			}
		}
		v.Results = append(v.Results, out)
	}
	return s.writeMediaJSON(w, m, v)
}

// documentText reads a document answered as a string or {"text": …}.
func documentText(raw json.RawMessage) *rerankText {
	var s string
	if json.Unmarshal(raw, &s) == nil && isSet(raw) {
		return &rerankText{s}
	}
	var t rerankText
	if json.Unmarshal(raw, &t) == nil && isSet(raw) {
		return &t
	}
	return nil
}

// decodeRerank validates a rerank request as the reference does.
func decodeRerank(body []byte) (*rerankUpstream, error) {
	bad := func(msg string) error { return errorf(http.StatusBadRequest, "rerank: "+msg) }
	var req struct {
		Model           string            `json:"model"`
		Query           *string           `json:"query"`
		Documents       []json.RawMessage `json:"documents"`
		TopN            json.RawMessage   `json:"top_n"`
		ReturnDocuments json.RawMessage   `json:"return_documents"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, errorf(http.StatusBadRequest, "Invalid JSON body")
	}
	switch {
	case req.Model == "":
		return nil, bad("model must be a non-empty string")
	case req.Query == nil:
		return nil, bad("query must be a string")
	case len(req.Documents) == 0:
		return nil, bad("documents must contain at least one document")
	}
	up := &rerankUpstream{Model: req.Model, Query: *req.Query, Documents: make([]string, 0, len(req.Documents))}
	for i, raw := range req.Documents {
		d := documentText(raw)
		if d == nil {
			return nil, bad("documents[" + strconv.Itoa(i) + "] must be a string or an object with a text string")
		}
		up.Documents = append(up.Documents, d.Text)
	}
	if isSet(req.TopN) {
		var n float64
		if json.Unmarshal(req.TopN, &n) != nil || n < 1 || n != math.Trunc(n) || n > math.MaxInt32 {
			return nil, bad("top_n must be a positive integer")
		}
		up.TopN = int(n)
	}
	if isSet(req.ReturnDocuments) {
		var b bool
		if json.Unmarshal(req.ReturnDocuments, &b) != nil {
			return nil, bad("return_documents must be a boolean")
		}
		up.ReturnDocuments = &b
	}
	return up, nil
}
