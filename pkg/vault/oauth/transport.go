package oauth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
)

// tokenTransport adapts the token request that golang.org/x/oauth2 builds
// (always an application/x-www-form-urlencoded POST) to providers that want
// something else: a JSON object body (Anthropic) and extra headers (the
// anthropic-beta and User-Agent headers Claude Code sends on refresh).
//
// Why a RoundTripper instead of a hand-written request: oauth2 then still
// owns the reply — it parses the token JSON, keeps the old refresh token when
// none is returned, and reports failures as *oauth2.RetrieveError with the
// status and OAuth error code, which Classify relies on. Every provider thus
// shares one reply path and one error type.
type tokenTransport struct {
	base    http.RoundTripper // nil → http.DefaultTransport
	json    bool              // rewrite the form body into a JSON object
	headers map[string]string // set on every request
}

// jsonKeyOrder is the key order of the reference's JSON token bodies
// (standard grant parameters first, then rule extras); other keys follow sorted.
var jsonKeyOrder = []string{"grant_type", "client_id", "client_secret", "refresh_token", "code", "redirect_uri", "code_verifier", "state"}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	out := req.Clone(req.Context())
	if t.json && req.Body != nil {
		form, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("oauth: read token request: %w", err)
		}
		body, err := formToJSON(string(form))
		if err != nil {
			return nil, err
		}
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		out.ContentLength = int64(len(body))
		out.Header.Set("Content-Type", "application/json")
	}
	for k, v := range t.headers {
		out.Header.Set(k, v)
	}
	return base.RoundTrip(out)
}

// formToJSON turns a urlencoded form into a JSON object of strings (the
// first value of each key), keys in jsonKeyOrder.
func formToJSON(form string) ([]byte, error) {
	vals, err := url.ParseQuery(form)
	if err != nil {
		return nil, fmt.Errorf("oauth: token request is not a form: %w", err)
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		if !slices.Contains(jsonKeyOrder, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var ordered []string
	for _, k := range jsonKeyOrder {
		if _, ok := vals[k]; ok {
			ordered = append(ordered, k)
		}
	}
	ordered = append(ordered, keys...)
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range ordered {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(vals.Get(k))
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
