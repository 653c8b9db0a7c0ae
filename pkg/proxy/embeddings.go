package proxy

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/openai"
)

// embeddingsLimit is the largest embeddings request body (8 MiB).
const embeddingsLimit = 8 << 20

// embeddingsRequest is the OpenAI embeddings request.
type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     json.RawMessage `json:"dimensions,omitempty"`
	EncodingFormat json.RawMessage `json:"encoding_format,omitempty"`
	User           json.RawMessage `json:"user,omitempty"`
}

// embeddingsUpstream is the body sent upstream.
type embeddingsUpstream struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions,omitempty"`
	User           string          `json:"user,omitempty"`
}

// embeddingsAnswer is the OpenAI embeddings answer; the data items are
// kept as sent.
type embeddingsAnswer struct {
	Data  []json.RawMessage `json:"data"`
	Usage struct {
		PromptTokens int64 `json:"prompt_tokens"`
		TotalTokens  int64 `json:"total_tokens"`
	} `json:"usage"`
}

// embeddings answers POST /v1/embeddings (OpenAI embeddings wire) for
// embedding models on an OpenAI or OpenAI-compatible base.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) error {
	m := s.beginMedia(w, r, "embeddings")
	if err := requireJSON(r); err != nil {
		return err
	}
	c := &call{inflight: s.inflight}
	defer c.recycle()
	body, err := s.readBodyLimit(w, r, c, embeddingsLimit)
	c.body = body
	if err != nil {
		return mediaBodyError(err, "8 MiB")
	}
	up, err := decodeEmbeddings(body)
	if err != nil {
		return err
	}
	if err := s.resolveMedia(r, m, up.Model, []string{apiEmbeddings}, func(id string, _ *llm.Model) string {
		return "Model " + id + " does not support embeddings"
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
		return jsonRequest(s.mediaURL(m, "/embeddings"), out), nil
	})
	if err != nil {
		return err
	}
	var ans embeddingsAnswer
	if err := readMediaAnswer(resp, &ans); err != nil {
		return err
	}
	s.observeMedia(r, m, llm.Usage{Input: ans.Usage.PromptTokens}.WithCost(m.model.Cost))
	return s.writeMediaBody(w, m, appendEmbeddings(nil, &ans, m.clientID))
}

// appendEmbeddings appends the answer: the upstream's data items as they
// came (json.Unmarshal has checked them; json.Marshal would scan the
// vectors, most of the answer, once more) under the client's model id.
func appendEmbeddings(dst []byte, ans *embeddingsAnswer, model string) []byte {
	size := len(model) + 128
	for _, d := range ans.Data {
		size += len(d) + 1
	}
	dst = slices.Grow(dst, size)
	dst = append(dst, `{"object":"list","data":[`...)
	for i, d := range ans.Data {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, d...)
	}
	dst = append(dst, `],"model":`...)
	dst = jsonw.String(dst, model)
	dst = append(dst, `,"usage":{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, ans.Usage.PromptTokens, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, ans.Usage.TotalTokens, 10)
	return append(dst, "}}"...)
}

// decodeEmbeddings validates an embeddings request as the reference does
// and returns the upstream body (model still the client's id).
func decodeEmbeddings(body []byte) (*embeddingsUpstream, error) {
	bad := func(msg string) error { return errorf(http.StatusBadRequest, "embeddings: "+msg) }
	var req embeddingsRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, errorf(http.StatusBadRequest, "Invalid JSON body")
	}
	if req.Model == "" {
		return nil, bad("model must be a non-empty string")
	}
	if err := checkEmbeddingsInput(req.Input); err != "" {
		return nil, bad(err)
	}
	up := &embeddingsUpstream{Model: req.Model, Input: req.Input, EncodingFormat: "float"}
	if isSet(req.Dimensions) {
		var d float64
		if json.Unmarshal(req.Dimensions, &d) != nil || d < 1 || d != math.Trunc(d) || d > math.MaxInt32 {
			return nil, bad("dimensions must be a positive integer")
		}
		up.Dimensions = int(d)
	}
	if isSet(req.EncodingFormat) {
		var f string
		if json.Unmarshal(req.EncodingFormat, &f) != nil || f != "float" && f != "base64" {
			return nil, bad(`encoding_format must be "float" or "base64"`)
		}
		up.EncodingFormat = f
	}
	if isSet(req.User) {
		if json.Unmarshal(req.User, &up.User) != nil || up.User == "" {
			return nil, bad("user must be a non-empty string")
		}
	}
	return up, nil
}

// isSet reports whether a raw member was present and not null.
func isSet(raw json.RawMessage) bool { return len(raw) > 0 && !bytes.Equal(raw, []byte("null")) }

// checkEmbeddingsInput returns what is wrong with an embeddings input, ""
// when it is a non-empty string or a non-empty array of non-empty strings,
// of numbers (one token array), or of non-empty number arrays.
func checkEmbeddingsInput(raw json.RawMessage) string {
	const wrongArray = "input arrays must contain non-empty strings, finite numbers, or non-empty arrays of finite numbers"
	var str string
	if json.Unmarshal(raw, &str) == nil && isSet(raw) {
		if str == "" {
			return "input must not be empty"
		}
		return ""
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return "input must be a non-empty string or array"
	}
	var strs []string
	if json.Unmarshal(raw, &strs) == nil {
		for _, s := range strs {
			if s == "" {
				return wrongArray
			}
		}
		return ""
	}
	var nums []float64
	if json.Unmarshal(raw, &nums) == nil {
		return ""
	}
	var arrays [][]float64
	if json.Unmarshal(raw, &arrays) == nil {
		for _, a := range arrays {
			if len(a) == 0 {
				return wrongArray
			}
		}
		return ""
	}
	return wrongArray
}
