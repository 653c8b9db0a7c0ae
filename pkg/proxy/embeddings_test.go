package proxy

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"testing"
)

// The embeddings request and answer readers are checked against
// encoding/json: oldEmbeddings and oldEmbeddingsAnswer below decode the
// same documents with json.Unmarshal, and the two must agree on every
// verdict and on what goes upstream and back to the client.

// embeddingsRequestSeeds cover each member, its kinds and the rules'
// edges.
var embeddingsRequestSeeds = []string{
	`{"model":"m","input":"hello"}`,
	` { "model" : "m" , "input" : [ "a" , "b\u00e9" ] , "extra" : {"x":[1,2]} } `,
	`{"model":"m","input":[1,2,-3.5e2]}`,
	`{"model":"m","input":[[1,2],[3]]}`,
	`{"model":"m","input":[[1],[]]}`,
	`{"model":"m","input":["a",""]}`,
	`{"model":"m","input":["a",1]}`,
	`{"model":"m","input":[1,[1]]}`,
	`{"model":"m","input":[1,null]}`,
	`{"model":"m","input":[[1,null]]}`,
	`{"model":"m","input":[null]}`,
	`{"model":"m","input":[1e400]}`,
	`{"model":"m","input":[]}`,
	`{"model":"m","input":""}`,
	`{"model":"m","input":null}`,
	`{"model":"m","input":{"a":1}}`,
	`{"model":"m"}`,
	`{"input":"x"}`,
	`{"model":"","input":"x"}`,
	`{"model":null,"input":"x"}`,
	`{"model":5,"input":"x"}`,
	`{"Model":"m","INPUT":"x","input":"last wins"}`,
	`{"model":"m","input":"","input":"x"}`,
	`{"model":"m","input":"x","dimensions":256,"encoding_format":"base64","user":"u\"1"}`,
	`{"model":"m","input":"x","dimensions":256.0}`,
	`{"model":"m","input":"x","dimensions":0}`,
	`{"model":"m","input":"x","dimensions":2.5}`,
	`{"model":"m","input":"x","dimensions":"256"}`,
	`{"model":"m","input":"x","dimensions":1e10}`,
	`{"model":"m","input":"x","dimensions":"bad","dimensions":null}`,
	`{"model":"m","input":"x","encoding_format":"hex"}`,
	`{"model":"m","input":"x","encoding_format":1}`,
	`{"model":"m","input":"x","encoding_format":null}`,
	`{"model":"m","input":"x","user":""}`,
	`{"model":"m","input":"x","user":7}`,
	`{"model":"m","input":[],"dimensions":0,"user":""}`,
	`{"model":"m","input":"x"`,
	`{"model":"m","input":"x",}`,
	`[]`,
	`null`,
	``,
}

// The reader-based request decoder agrees with encoding/json.
func TestDecodeEmbeddingsMatchesUnmarshal(t *testing.T) {
	for _, body := range embeddingsRequestSeeds {
		compareEmbeddingsRequest(t, []byte(body))
	}
}

func FuzzDecodeEmbeddingsMatchesUnmarshal(f *testing.F) {
	for _, s := range embeddingsRequestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(compareEmbeddingsRequest)
}

func compareEmbeddingsRequest(t *testing.T, body []byte) {
	t.Helper()
	want, wantErr := oldEmbeddings(body)
	got, err := decodeEmbeddings(body)
	if errText(err) != errText(wantErr) {
		t.Fatalf("%q: error %q, encoding/json %q", body, errText(err), errText(wantErr))
	}
	if err != nil {
		return
	}
	if got.model != want.Model {
		t.Fatalf("%q: model %q, encoding/json %q", body, got.model, want.Model)
	}
	want.Model = "upstream-id"
	wantBody, _ := json.Marshal(want)
	gotBody := got.appendUpstream(nil, "upstream-id")
	if !sameJSON(gotBody, wantBody) {
		t.Fatalf("%q: upstream body %s, encoding/json %s", body, gotBody, wantBody)
	}
}

// answerSeeds are upstream answers.
var answerSeeds = []string{
	`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.25,-0.5]},{"object":"embedding","index":1,"embedding":[1,0]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":7,"total_tokens":7}}`,
	` { "data" : [ {"embedding":"AAAA"} , {"embedding":"BBBB"} ] , "usage" : { "prompt_tokens" : 3 , "total_tokens" : 4 , "x" : 1 } } `,
	`{"DATA":[1],"data":[2],"Usage":{"PROMPT_TOKENS":5},"usage":{"total_tokens":6}}`,
	`{"data":null,"usage":null}`,
	`{"model":"m"}`,
	`null`,
	`{"data":{}}`,
	`{"data":"x"}`,
	`{"usage":5}`,
	`{"usage":{"prompt_tokens":1.5}}`,
	`{"usage":{"prompt_tokens":"1"}}`,
	`{"data":[1,]}`,
	`{"data":[1]`,
	`[]`,
	``,
}

// The reader-based answer decoder agrees with encoding/json.
func TestReadEmbeddingsAnswerMatchesUnmarshal(t *testing.T) {
	for _, body := range answerSeeds {
		compareEmbeddingsAnswer(t, []byte(body))
	}
}

func FuzzReadEmbeddingsAnswerMatchesUnmarshal(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(compareEmbeddingsAnswer)
}

func compareEmbeddingsAnswer(t *testing.T, body []byte) {
	t.Helper()
	want, wantErr := oldEmbeddingsAnswer(body)
	got, err := readEmbeddingsAnswer(body)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, encoding/json %v", body, err, wantErr)
	}
	if err != nil {
		return
	}
	out := appendEmbeddings(nil, &got, "client/id")
	if !json.Valid(out) || !sameJSON(out, want) {
		t.Fatalf("%q: answer %s, encoding/json %s", body, out, want)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return strconv.Itoa(ae.Status) + " " + ae.Message
	}
	return err.Error()
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

// oldUpstream is the upstream body as encoding/json writes it.
type oldUpstream struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions,omitempty"`
	User           string          `json:"user,omitempty"`
}

// oldEmbeddings validates a request with json.Unmarshal: the rules of
// decodeEmbeddings, spelled with encoding/json. A null is not a number
// (pointers tell it apart).
func oldEmbeddings(body []byte) (*oldUpstream, error) {
	var req struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		Dimensions     json.RawMessage `json:"dimensions"`
		EncodingFormat json.RawMessage `json:"encoding_format"`
		User           json.RawMessage `json:"user"`
	}
	bad := func(msg string) error { return errorf(400, "embeddings: "+msg) }
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, errorf(400, "Invalid JSON body")
	}
	if req.Model == "" {
		return nil, bad("model must be a non-empty string")
	}
	if p := oldInputProblem(req.Input); p != "" {
		return nil, bad(p)
	}
	up := &oldUpstream{Model: req.Model, Input: req.Input, EncodingFormat: "float"}
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

func oldInputProblem(raw json.RawMessage) string {
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
	var strs []*string
	if json.Unmarshal(raw, &strs) == nil {
		for _, s := range strs {
			if s == nil || *s == "" {
				return wrongInputArray
			}
		}
		return ""
	}
	var nums []*float64
	if json.Unmarshal(raw, &nums) == nil {
		for _, n := range nums {
			if n == nil {
				return wrongInputArray
			}
		}
		return ""
	}
	var arrays [][]*float64
	if json.Unmarshal(raw, &arrays) == nil {
		for _, a := range arrays {
			if len(a) == 0 {
				return wrongInputArray
			}
			for _, n := range a {
				if n == nil {
					return wrongInputArray
				}
			}
		}
		return ""
	}
	return wrongInputArray
}

// oldEmbeddingsAnswer reads an answer with json.Unmarshal and writes the
// client's answer with json.Marshal.
func oldEmbeddingsAnswer(body []byte) ([]byte, error) {
	var ans struct {
		Data  []json.RawMessage `json:"data"`
		Usage struct {
			PromptTokens int64 `json:"prompt_tokens"`
			TotalTokens  int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return nil, err
	}
	if ans.Data == nil {
		ans.Data = []json.RawMessage{}
	}
	return json.Marshal(map[string]any{"object": "list", "data": ans.Data, "model": "client/id",
		"usage": map[string]int64{"prompt_tokens": ans.Usage.PromptTokens, "total_tokens": ans.Usage.TotalTokens}})
}
