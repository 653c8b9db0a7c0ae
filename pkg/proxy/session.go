package proxy

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/pkg/llm"
)

// passthroughHeaders are the inbound headers forwarded to the provider
// layer, besides every x-stainless-*. The provider
// decides which of them reach the upstream.
var passthroughHeaders = canonicalNames(
	"anthropic-beta", "anthropic-version", "anthropic-user-profile-id", "openai-organization", "openai-project",
	"openai-beta", "chatgpt-account-id", "originator", "session_id", "conversation_id",
	"x-prompt-cache-key", "x-session-id", "x-conversation-id",
)

// headerName is a header name in lower case (as passed on) and in the
// canonical form the inbound header map holds it under, computed once:
// Header.Get canonicalises a name net/http does not know into a fresh
// string on every call.
type headerName struct{ lower, canonical string }

func canonicalNames(names ...string) []headerName {
	out := make([]headerName, len(names))
	for i, n := range names {
		out[i] = headerName{n, http.CanonicalHeaderKey(n)}
	}
	return out
}

// get is h.Get(n) without the canonicalisation.
func (n headerName) get(h http.Header) string {
	if v := h[n.canonical]; len(v) > 0 {
		return v[0]
	}
	return ""
}

const stainlessPrefix = "x-stainless-"

// mergePassthrough adds the allow-listed inbound headers (lowercased,
// empty values dropped) to req.Headers; values the codec already set win.
func mergePassthrough(req *llm.Request, h http.Header) {
	add := func(name, value string) {
		if value == "" {
			return
		}
		if req.Headers == nil {
			req.Headers = map[string]string{}
		}
		if _, ok := req.Headers[name]; !ok {
			req.Headers[name] = value
		}
	}
	for _, n := range passthroughHeaders {
		add(n.lower, n.get(h))
	}
	for k, v := range h {
		// The prefix test first: lowercasing every inbound key allocates.
		if len(k) > len(stainlessPrefix) && strings.EqualFold(k[:len(stainlessPrefix)], stainlessPrefix) && len(v) > 0 {
			add(strings.ToLower(k), v[0])
		}
	}
}

// sessionHeaders are the headers that carry a client session key, in
// priority order.
var sessionHeaders = canonicalNames("x-prompt-cache-key", "session_id", "conversation_id", "x-session-id", "x-conversation-id")

// sessionBody is the part of a foreign-format body the session id reads.
type sessionBody struct {
	PromptCacheKey string          `json:"prompt_cache_key"`
	Metadata       map[string]any  `json:"metadata"`
	Tools          json.RawMessage `json:"tools"`
	// Messages stays one raw value: only its first non-system element is
	// read (firstMessage), so a long conversation costs one scan, not one
	// allocation and decode per message.
	Messages json.RawMessage `json:"messages"`
	Input    json.RawMessage `json:"input"`
}

// sessionID returns the session id of a request:
// the first client-supplied key, else an id derived from the conversation
// head, so one conversation keeps its credential and its prompt cache. A
// key that is empty or only white space counts as absent.
//
// The derived id hashes the requested model id, the system prompt, the
// tools as sent and the first non-system message as sent; the reference hashes its
// parsed context instead, so the ids differ from the reference's (they are
// stable across Go replicas, which is what stickiness needs).
//
// Cost: hashing is proportional to the hashed parts, but finding the
// top-level members still crosses the whole messages value: members after
// it (prompt_cache_key, metadata, tools, a repeated messages, whose last
// copy wins) are common, and only a read past the array finds them
// (docs/performance.md).
func sessionID(f *format, req *llm.Request, body []byte, h http.Header) string {
	if f.piNative {
		if given(req.SessionID) {
			return req.SessionID
		}
		return derivedSessionID(req, nil, nil)
	}
	var sb sessionBody
	if !f.gemini && !scanSessionBody(body, &sb) { // a Gemini body has none of its keys
		sb = sessionBody{} // not a JSON object: json.Unmarshal would read nothing either
	}
	if given(sb.PromptCacheKey) {
		return sb.PromptCacheKey
	}
	for _, k := range []string{"prompt_cache_key", "session_id", "conversation_id"} {
		if s, ok := sb.Metadata[k].(string); ok && given(s) {
			return s
		}
	}
	for _, k := range sessionHeaders {
		if v := k.get(h); given(v) {
			return v
		}
	}
	if f.gemini {
		return geminiSessionID(req)
	}
	first, isArray := firstMessage(sb.Messages)
	if !isArray && len(sb.Input) > 0 {
		if first, isArray = firstMessage(sb.Input); !isArray {
			first = sb.Input // a string input is one user message
		}
	}
	return derivedSessionID(req, sb.Tools, first)
}

// given reports whether a client's session key is set: not empty and not
// only white space.
func given(key string) bool { return strings.TrimSpace(key) != "" }

// geminiSessionID derives the session id of a Gemini API request from the
// model, the system instruction, the tools and the first turn, read from
// the decoded request: a second pass over a large body would cost as much
// as its decoding.
func geminiSessionID(req *llm.Request) string {
	var tools, first []byte
	if len(req.Tools) > 0 {
		tools, _ = json.Marshal(req.Tools)
	}
	if len(req.Messages) > 0 {
		first, _ = json.Marshal(req.Messages[0].Content)
	}
	return derivedSessionID(req, tools, first)
}

// scanSessionBody fills sb from body as json.Unmarshal would, reading only
// the members it needs with the shared JSON reader, which skips the others
// (the whole messages array, usually) without decoding them; false when
// body is not a JSON object.
func scanSessionBody(body []byte, sb *sessionBody) bool {
	r := jsonr.NewReader(body)
	r.Object(func(key []byte) error {
		switch {
		case jsonr.FoldsTo(key, "prompt_cache_key"):
			sb.PromptCacheKey = ""
			if r.Peek() == '"' {
				sb.PromptCacheKey = r.String()
			} else {
				r.Skip() // null leaves it empty; another kind fails json.Unmarshal alike
			}
		case jsonr.FoldsTo(key, "metadata"):
			sb.Metadata = nil
			_ = json.Unmarshal(r.Raw(), &sb.Metadata)
		case jsonr.FoldsTo(key, "tools"):
			sb.Tools = r.Raw()
		case jsonr.FoldsTo(key, "messages"):
			sb.Messages = r.Raw()
		case jsonr.FoldsTo(key, "input"):
			sb.Input = r.Raw()
		default:
			r.Skip()
		}
		return nil
	})
	return r.End() == nil
}

// firstMessage returns the first element of the JSON array raw that is
// not a system message (system messages are part of the system prompt,
// hashed on their own); isArray reports whether raw is an array. It stops
// reading at that element.
func firstMessage(raw json.RawMessage) (first json.RawMessage, isArray bool) {
	r := jsonr.NewReader(raw)
	if !r.BeginArray() {
		return nil, false
	}
	for r.More() {
		if m := r.Raw(); r.Err() == nil && !isSystem(m) {
			return m, true
		}
	}
	return nil, r.Err() == nil
}

// isSystem reports whether message m has the role "system" as
// encoding/json reads it: the last member whose key is "role" without
// case; null leaves the role unset, any other kind is no role at all.
func isSystem(m []byte) bool {
	r := jsonr.NewReader(m)
	system := false
	r.Object(func(key []byte) error {
		if !jsonr.FoldsTo(key, "role") {
			r.Skip()
			return nil
		}
		if r.Null() {
			return nil
		}
		system = string(r.Bytes()) == "system"
		return nil
	})
	return r.End() == nil && system
}

// derivedSessionID is SHA-256 over the parts joined with NUL, its first 32
// hex digits shaped 8-4-4-4-12.
func derivedSessionID(req *llm.Request, tools, first json.RawMessage) string {
	h := sha256.New()
	h.Write([]byte(req.Model))
	// The system blocks joined with blank lines, written part by part.
	for i, b := range req.System {
		if i == 0 {
			h.Write([]byte{0})
		} else {
			h.Write([]byte("\n\n"))
		}
		h.Write([]byte(b.Text))
	}
	if len(tools) > 0 && !noTools(tools) {
		h.Write([]byte{0})
		writeCompact(h, tools)
	}
	if len(first) > 0 {
		h.Write([]byte{0})
		writeCompact(h, first)
	}
	var sum [sha256.Size]byte
	var x [32]byte
	hex.Encode(x[:], h.Sum(sum[:0])[:16])
	return uuidShape(&x, x[12])
}

// uuidShape lays 32 hex digits out as 8-4-4-4-12 with version digit v
// (the digit at x[12] keeps them as they are), in one allocation.
func uuidShape(x *[32]byte, v byte) string {
	var id [36]byte
	copy(id[:8], x[:8])
	id[8] = '-'
	copy(id[9:13], x[8:12])
	id[13], id[14] = '-', v
	copy(id[15:18], x[13:16])
	id[18] = '-'
	copy(id[19:23], x[16:20])
	id[23] = '-'
	copy(id[24:], x[20:])
	return string(id[:])
}

// noTools reports whether the raw tools value is null or an empty array.
func noTools(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return string(t) == "null" || len(t) >= 2 && t[0] == '[' && len(bytes.TrimSpace(t[1:len(t)-1])) == 0
}

// writeCompact writes raw to w as json.Compact writes it (raw as it is
// when json.Compact fails).
func writeCompact(w io.Writer, raw []byte) {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		_, _ = w.Write(raw)
		return
	}
	_, _ = w.Write(b.Bytes())
}

// newMessageID returns an Anthropic message id: "msg_" + 24 hex digits.
func newMessageID() string { return "msg_" + randomHex(12) }

// newRequestID returns the x-request-id of an inference response (a
// random UUID).
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	var x [32]byte
	hex.Encode(x[:], b[:])
	return uuidShape(&x, '4')
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
