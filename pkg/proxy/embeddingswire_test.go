package proxy_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// An embeddings request goes upstream with the upstream's model id, the
// client's input as sent and its options; the answer comes back with the
// upstream's vectors unchanged under the client's model id, also when it
// is larger than the first read buffer and of unknown length (chunked).
func TestEmbeddingsPassThrough(t *testing.T) {
	var data strings.Builder
	data.WriteString(`[`)
	for i := range 3 {
		if i > 0 {
			data.WriteString(`, `)
		}
		fmt.Fprintf(&data, `{"object":"embedding","index":%d,"embedding":[`, i)
		for j := range 3072 {
			if j > 0 {
				data.WriteByte(',')
			}
			fmt.Fprintf(&data, "%.9f", float64(j%89)/89-0.5)
		}
		data.WriteString(`]}`)
	}
	data.WriteString(`]`)
	answer := `{"object":"list","data":` + data.String() + `,"model":"text-embedding-3-large","usage":{"prompt_tokens":12,"total_tokens":12},"extra":{"x":[1,2]}}`
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int, _ string) {
		w.Header().Set("Content-Type", "application/json")
		for len(answer) > 0 { // several writes: no Content-Length
			k := min(len(answer), 10000)
			_, _ = w.Write([]byte(answer[:k]))
			answer = answer[k:]
		}
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "openai", "sk-one")}}
	gw := gateway(t, src, map[string]string{"openai": up.srv.URL + "/v1"}, nil)
	resp := post(t, gw.URL+"/v1/embeddings", gatewayToken,
		`{ "model" : "openai/text-embedding-3-large", "input" : [[1, 2], [3]], "dimensions": 3072.0, "encoding_format": "float", "user": "u\"1", "ignored": true }`)
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if want := `{"model":"text-embedding-3-large","input":[[1, 2], [3]],"encoding_format":"float","dimensions":3072,"user":"u\"1"}`; up.bodies[0] != want {
		t.Errorf("upstream body\n%s\nwant\n%s", up.bodies[0], want)
	}
	if want := `{"object":"list","data":` + data.String() + `,"model":"openai/text-embedding-3-large","usage":{"prompt_tokens":12,"total_tokens":12}}`; body != want {
		t.Errorf("answer differs (%d bytes, want %d)", len(body), len(want))
	}
	if !json.Valid([]byte(body)) {
		t.Errorf("answer is not JSON")
	}
}

// A malformed upstream answer is a 502 in the non-chat envelope.
func TestEmbeddingsMalformedAnswer(t *testing.T) {
	for _, answer := range []string{`{"data":[1,`, `{"data":{}}`, `{"data":[],"usage":{"prompt_tokens":1.5}}`, `[]`} {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int, _ string) {
			writeJSON(w, 200, nil, answer)
		})
		src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "openai", "sk-one")}}
		gw := gateway(t, src, map[string]string{"openai": up.srv.URL + "/v1"}, nil)
		resp := post(t, gw.URL+"/v1/embeddings", gatewayToken, `{"model":"openai/text-embedding-3-small","input":"x"}`)
		want := `{"error":{"code":502,"type":"upstream_error","message":"Upstream answered invalid JSON"}}`
		if body := readAll(t, resp); resp.StatusCode != http.StatusBadGateway || body != want {
			t.Errorf("answer %s: %d %s", answer, resp.StatusCode, body)
		}
	}
}
