package proxy

import (
	"net/http"
	"time"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/anthropic"
	"github.com/ompgo/omp/pkg/llm/google"
	"github.com/ompgo/omp/pkg/llm/openai"
	"github.com/ompgo/omp/pkg/llm/pinative"
)

// format is one inbound wire format: how a body is decoded into the
// canonical request, how the canonical events are encoded back, and how a
// failure looks.
type format struct {
	// name is the log name of the format.
	name string
	// decode parses a body; model is the model id the client asked for.
	decode func(body []byte) (req *llm.Request, err error)
	// newEncoder returns the SSE encoder of one streamed response.
	newEncoder func(req *llm.Request, now time.Time) encoder
	// final encodes a successful non-streamed message; ok false means the
	// message cannot be encoded as a success.
	final func(req *llm.Request, m *llm.Message, now time.Time) (body []byte, ok bool)
	// jsonType is the Content-Type of a non-streamed 200; jsonTypeValue
	// the same as a shared header value (see hdr).
	jsonType      string
	jsonTypeValue []string
	// render writes an error envelope.
	render func(w http.ResponseWriter, r *http.Request, p httpx.Problem)
	// piNative: session id from options.sessionId only, no body or
	// header cache keys.
	piNative bool
	// gemini: the model and the stream flag come from the URL, and the
	// derived session id is read from the decoded request.
	gemini bool
	// streamType, when set, is the Content-Type of a streamed 200 that is
	// not SSE (Gemini's JSON array).
	streamType string
}

// encoder is the SSE encoder of one streamed response: encode appends the
// frames of one canonical event; ping, when the format has one, appends a
// keepalive frame (Anthropic's ping every 15 s).
type encoder struct {
	encode func(dst []byte, ev *llm.Event) []byte
	ping   func(dst []byte) []byte
}

var chatFormat = &format{
	name:   "openai-chat",
	decode: openai.DecodeChatRequest,
	newEncoder: func(req *llm.Request, now time.Time) encoder {
		return encoder{encode: openai.NewChatStream(openai.ChatOptions{ID: openai.NewChatID(), Model: req.Model, Created: now.Unix(), IncludeUsage: req.IncludeStreamingUsage}).Append}
	},
	final: func(req *llm.Request, m *llm.Message, now time.Time) ([]byte, bool) {
		return openai.AppendChatCompletion(nil, m, openai.ChatOptions{ID: openai.NewChatID(), Model: req.Model, Created: now.Unix()}), true
	},
	jsonType: "application/json",
	render:   renderOpenAI,
}

var messagesFormat = &format{
	name:   "anthropic-messages",
	decode: anthropic.DecodeRequest,
	newEncoder: func(req *llm.Request, _ time.Time) encoder {
		e := anthropic.NewStreamEncoder(req.Model, newMessageID())
		return encoder{encode: e.Encode, ping: e.Ping}
	},
	final: func(req *llm.Request, m *llm.Message, _ time.Time) ([]byte, bool) {
		b, err := anthropic.EncodeMessage(nil, m, req.Model, newMessageID())
		return b, err == nil
	},
	jsonType: "application/json",
	render:   renderAnthropic,
}

var responsesFormat = &format{
	name:   "openai-responses",
	decode: openai.DecodeResponsesRequest,
	newEncoder: func(req *llm.Request, now time.Time) encoder {
		return encoder{encode: openai.NewResponsesStream(openai.ResponsesOptions{ID: openai.NewResponseID(), Model: req.Model, Created: now.Unix()}).Append}
	},
	final: func(req *llm.Request, m *llm.Message, now time.Time) ([]byte, bool) {
		return openai.AppendResponse(nil, m, openai.ResponsesOptions{ID: openai.NewResponseID(), Model: req.Model, Created: now.Unix()}), true
	},
	jsonType: "application/json",
	render:   renderOpenAI,
}

var piFormat = &format{
	name: "pi-native",
	decode: func(body []byte) (*llm.Request, error) {
		r, err := pinative.DecodeRequest(body)
		if err != nil {
			return nil, err
		}
		req := r.Canonical
		req.Model, req.Stream = r.ModelID, r.Stream
		return &req, nil
	},
	newEncoder: func(*llm.Request, time.Time) encoder {
		return encoder{encode: func(dst []byte, ev *llm.Event) []byte {
			dst = pinative.AppendFrame(dst, ev)
			if ev.Type.IsTerminal() {
				dst = pinative.AppendDone(dst)
			}
			return dst
		}}
	},
	final: func(_ *llm.Request, m *llm.Message, _ time.Time) ([]byte, bool) {
		return pinative.AppendResponse(nil, m), true
	},
	jsonType: pinative.ContentTypeJSON,
	render:   renderPi,
	piNative: true,
}

// geminiFormat is the Gemini API (generateContent, and
// streamGenerateContent with alt=sse); geminiArrayFormat is
// streamGenerateContent without alt=sse, one JSON array written as the
// chunks arrive.
var geminiFormat, geminiArrayFormat = newGeminiFormat(false), newGeminiFormat(true)

func newGeminiFormat(array bool) *format {
	f := &format{
		name:   "gemini",
		decode: google.DecodeRequest,
		newEncoder: func(req *llm.Request, _ time.Time) encoder {
			return encoder{encode: google.NewStreamEncoder(req.Model, newGeminiResponseID(), array).Encode}
		},
		final: func(req *llm.Request, m *llm.Message, _ time.Time) ([]byte, bool) {
			return google.AppendResponse(nil, m, req.Model, newGeminiResponseID())
		},
		jsonType: "application/json; charset=UTF-8",
		render:   renderGemini,
		gemini:   true,
	}
	if array {
		f.streamType = f.jsonType
	}
	return f
}

func init() {
	for _, f := range []*format{chatFormat, messagesFormat, responsesFormat, piFormat, geminiFormat, geminiArrayFormat} {
		f.jsonTypeValue = []string{f.jsonType}
	}
}
