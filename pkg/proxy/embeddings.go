package proxy

import (
	"math"
	"net/http"
	"strconv"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/openai"
)

// embeddingsLimit is the largest embeddings request body (8 MiB).
const embeddingsLimit = 8 << 20

// An embeddings request and its answer are read with the shared JSON
// reader, which looks at each byte once and decodes only what the gateway
// needs: the request's model, the kind of its input and its options, and
// the answer's usage. The input and the answer's data array (the vectors,
// nearly all of the answer) are validated and copied through as they came.

// embeddingsRequest is what the gateway reads of an OpenAI embeddings
// request. input and user alias the request body.
type embeddingsRequest struct {
	model          string
	input          []byte // the raw input value
	encodingFormat string // "float" unless the client asked for "base64"
	dimensions     int    // 0 when absent
	user           []byte // the raw user string, nil when absent
}

// embeddingsAnswer is what the gateway reads of an upstream embeddings
// answer. data aliases the answer's bytes.
type embeddingsAnswer struct {
	data                      []byte // the raw data array, nil when absent or null
	promptTokens, totalTokens int64
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
	if err != nil {
		return mediaBodyError(err, "8 MiB")
	}
	req, err := decodeEmbeddings(body)
	if err != nil {
		return err
	}
	if err := s.resolveMedia(r, m, req.model, []string{apiEmbeddings}, func(id string, _ *llm.Model) string {
		return "Model " + id + " does not support embeddings"
	}); err != nil {
		return err
	}
	out := req.appendUpstream(make([]byte, 0, len(body)+64), m.model.WireID())
	c.recycle() // out holds all it needs of the body
	resp, err := s.sendMedia(r.Context(), m, func() (openai.MediaRequest, error) {
		return jsonRequest(s.mediaURL(m, "/embeddings"), out), nil
	})
	if err != nil {
		return err
	}
	raw, err := readMediaBytes(resp)
	if err != nil {
		return err
	}
	defer httpx.PutBuffer(raw)
	ans, err := readEmbeddingsAnswer(raw)
	if err != nil {
		return &apiError{Status: http.StatusBadGateway, Message: "Upstream answered invalid JSON", Err: err}
	}
	s.observeMedia(r, m, llm.Usage{Input: ans.promptTokens}.WithCost(m.model.Cost))
	answer := appendEmbeddings(httpx.GetBuffer(len(ans.data)+len(m.clientID)+128), &ans, m.clientID)
	defer httpx.PutBuffer(answer)
	return s.writeMediaBody(w, m, answer)
}

// appendUpstream appends the upstream request body: model as the model id,
// the client's input as it came, and the options (encoding_format always,
// "float" by default).
func (e *embeddingsRequest) appendUpstream(dst []byte, model string) []byte {
	dst = append(dst, `{"model":`...)
	dst = jsonw.String(dst, model)
	dst = append(dst, `,"input":`...)
	dst = append(dst, e.input...)
	dst = append(dst, `,"encoding_format":"`...)
	dst = append(dst, e.encodingFormat...)
	dst = append(dst, '"')
	if e.dimensions > 0 {
		dst = append(dst, `,"dimensions":`...)
		dst = strconv.AppendInt(dst, int64(e.dimensions), 10)
	}
	if e.user != nil {
		dst = append(dst, `,"user":`...)
		dst = append(dst, e.user...)
	}
	return append(dst, '}')
}

// appendEmbeddings appends the client's answer: the upstream's data array
// as it came under the client's model id, with the upstream's usage.
func appendEmbeddings(dst []byte, ans *embeddingsAnswer, model string) []byte {
	dst = append(dst, `{"object":"list","data":`...)
	if ans.data == nil {
		dst = append(dst, "[]"...)
	}
	dst = append(dst, ans.data...)
	dst = append(dst, `,"model":`...)
	dst = jsonw.String(dst, model)
	dst = append(dst, `,"usage":{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, ans.promptTokens, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, ans.totalTokens, 10)
	return append(dst, "}}"...)
}

// readEmbeddingsAnswer reads an upstream embeddings answer as
// json.Unmarshal would into {data: [raw items], usage: {prompt_tokens,
// total_tokens}}: keys match case-insensitively, the last of a repeated
// member wins, other members are skipped (but validated).
func readEmbeddingsAnswer(b []byte) (embeddingsAnswer, error) {
	var a embeddingsAnswer
	r := jsonr.NewReader(b)
	if r.Null() {
		return a, r.End()
	}
	r.Object(func(key []byte) error {
		switch {
		case jsonr.FoldsTo(key, "data"):
			a.data = nil
			if !r.Null() {
				if r.Peek() != '[' {
					r.BeginArray() // records the type error
				}
				a.data = r.Raw()
			}
		case jsonr.FoldsTo(key, "usage"):
			if r.Null() {
				return nil
			}
			r.Object(func(key []byte) error {
				switch {
				case jsonr.FoldsTo(key, "prompt_tokens"):
					a.promptTokens = r.IntExact()
				case jsonr.FoldsTo(key, "total_tokens"):
					a.totalTokens = r.IntExact()
				default:
					r.Skip()
				}
				return nil
			})
		default:
			r.Skip()
		}
		return nil
	})
	return a, r.End()
}

// decodeEmbeddings validates an embeddings request as the reference does:
// malformed JSON or a member of the wrong JSON kind is "Invalid JSON body";
// then the model, the input, dimensions, encoding_format and user are
// checked in that order. Keys match case-insensitively and the last of a
// repeated member wins, as with json.Unmarshal; other members are dropped.
func decodeEmbeddings(body []byte) (*embeddingsRequest, error) {
	req := &embeddingsRequest{encodingFormat: "float"}
	inputProblem := "input must be a non-empty string or array" // until one is read
	var dimensionsProblem, formatProblem, userProblem string
	r := jsonr.NewReader(body)
	if !r.Null() {
		r.Object(func(key []byte) error {
			switch {
			case jsonr.FoldsTo(key, "model"):
				req.model = r.String()
			case jsonr.FoldsTo(key, "input"):
				req.input, inputProblem = readEmbeddingsInput(r)
			case jsonr.FoldsTo(key, "dimensions"):
				req.dimensions, dimensionsProblem = 0, ""
				if !r.Null() {
					req.dimensions, dimensionsProblem = readDimensions(r)
				}
			case jsonr.FoldsTo(key, "encoding_format"):
				req.encodingFormat, formatProblem = "float", ""
				if !r.Null() {
					req.encodingFormat, formatProblem = readEncodingFormat(r)
				}
			case jsonr.FoldsTo(key, "user"):
				req.user, userProblem = nil, ""
				if !r.Null() {
					req.user, userProblem = readUser(r)
				}
			default:
				r.Skip()
			}
			return nil
		})
	}
	if r.End() != nil {
		return nil, errorf(http.StatusBadRequest, "Invalid JSON body")
	}
	for _, p := range []string{modelProblem(req.model), inputProblem, dimensionsProblem, formatProblem, userProblem} {
		if p != "" {
			return nil, errorf(http.StatusBadRequest, "embeddings: "+p)
		}
	}
	return req, nil
}

// modelProblem is what is wrong with an embeddings request's model.
func modelProblem(model string) string {
	if model == "" {
		return "model must be a non-empty string"
	}
	return ""
}

// wrongInputArray is the problem of an input array with an item of the
// wrong kind.
const wrongInputArray = "input arrays must contain non-empty strings, finite numbers, or non-empty arrays of finite numbers"

// readEmbeddingsInput reads the input value and returns its bytes and what
// is wrong with it, "" when it is a non-empty string or a non-empty array
// of non-empty strings, of numbers (one token array), or of non-empty
// number arrays.
func readEmbeddingsInput(r *jsonr.Reader) ([]byte, string) {
	mark := r.Mark()
	problem := ""
	switch r.Peek() {
	case '"':
		if len(r.Bytes()) == 0 {
			problem = "input must not be empty"
		}
	case '[':
		problem = readInputArray(r)
	default:
		r.Skip()
		problem = "input must be a non-empty string or array"
	}
	return r.Since(mark), problem
}

// readInputArray reads an input array and returns what is wrong with it.
// Its items must all be of one kind.
func readInputArray(r *jsonr.Reader) string {
	var kind byte // the first item's: '"', '0' (a number) or '['
	n := 0
	problem := ""
	r.BeginArray()
	for r.More() {
		n++
		c := r.Peek()
		if c == '-' || c >= '0' && c <= '9' {
			c = '0'
		}
		if kind == 0 {
			kind = c
		}
		ok := c == kind
		switch c {
		case '"':
			ok = len(r.Bytes()) > 0 && ok
		case '0':
			ok = readFinite(r) && ok
		case '[':
			ok = readNumberArray(r) && ok
		default:
			r.Skip()
			ok = false
		}
		if !ok {
			problem = wrongInputArray
		}
	}
	if n == 0 {
		return "input must be a non-empty string or array"
	}
	return problem
}

// readNumberArray reads an array and reports whether it is a non-empty
// array of finite numbers.
func readNumberArray(r *jsonr.Reader) bool {
	ok, n := true, 0
	r.BeginArray()
	for r.More() {
		n++
		if c := r.Peek(); c == '-' || c >= '0' && c <= '9' {
			ok = readFinite(r) && ok
		} else {
			r.Skip()
			ok = false
		}
	}
	return ok && n > 0
}

// readFinite reads a number and reports whether it is a finite float64.
func readFinite(r *jsonr.Reader) bool {
	n := r.Number()
	if n == nil {
		return false
	}
	_, err := strconv.ParseFloat(string(n), 64)
	return err == nil
}

// readDimensions reads a non-null dimensions value: a positive integer.
func readDimensions(r *jsonr.Reader) (int, string) {
	const problem = "dimensions must be a positive integer"
	if c := r.Peek(); c != '-' && (c < '0' || c > '9') {
		r.Skip()
		return 0, problem
	}
	n := r.Number()
	d, err := strconv.ParseFloat(string(n), 64)
	if n == nil || err != nil || d < 1 || d != math.Trunc(d) || d > math.MaxInt32 {
		return 0, problem
	}
	return int(d), ""
}

// readEncodingFormat reads a non-null encoding_format: "float" or "base64".
func readEncodingFormat(r *jsonr.Reader) (string, string) {
	const problem = `encoding_format must be "float" or "base64"`
	if r.Peek() != '"' {
		r.Skip()
		return "float", problem
	}
	switch string(r.Bytes()) {
	case "float":
		return "float", ""
	case "base64":
		return "base64", ""
	}
	return "float", problem
}

// readUser reads a non-null user: a non-empty string, returned raw.
func readUser(r *jsonr.Reader) ([]byte, string) {
	if r.Peek() != '"' {
		r.Skip()
		return nil, "user must be a non-empty string"
	}
	mark := r.Mark()
	if len(r.Bytes()) == 0 {
		return nil, "user must be a non-empty string"
	}
	return r.Since(mark), ""
}
