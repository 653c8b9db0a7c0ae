package anthropic

import (
	"errors"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

// ErrNotComplete is returned by EncodeMessage for a turn that failed
// (other than a safety stop): the gateway answers with EncodeError instead.
var ErrNotComplete = errors.New("anthropic: message did not complete")

// EncodeMessage appends the non-streaming Messages response for a finished
// turn. model is the id the client asked for; id is
// used when the upstream reported no message id. A safety stop is a normal
// 200 response with stop_reason refusal; any other failed turn returns
// ErrNotComplete.
func EncodeMessage(dst []byte, m *llm.Message, model, id string) ([]byte, error) {
	if !m.StopReason.IsTerminalSuccess() && !(m.StopReason == llm.StopError && m.Stop.Safety) {
		return dst, ErrNotComplete
	}
	if m.ResponseID != "" {
		id = m.ResponseID
	}
	dst = append(dst, `{"id":`...)
	dst = jsonw.String(dst, id)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = jsonw.String(dst, model)
	dst = append(dst, `,"content":[`...)
	first := true
	for i := range m.Content {
		c := &m.Content[i]
		start := len(dst)
		if !first {
			dst = append(dst, ',')
		}
		switch c.Type {
		case llm.ContentText:
			dst = append(dst, `{"type":"text","text":`...)
			dst = jsonw.String(dst, c.Text)
			dst = append(dst, '}')
		case llm.ContentThinking:
			dst = append(dst, `{"type":"thinking","thinking":`...)
			dst = jsonw.String(dst, c.Thinking)
			dst = append(dst, `,"signature":`...)
			dst = jsonw.String(dst, clientSignature(m, c.ThinkingSignature))
			dst = append(dst, '}')
		case llm.ContentRedactedThinking:
			dst = append(dst, `{"type":"redacted_thinking","data":`...)
			dst = jsonw.String(dst, c.Data)
			dst = append(dst, '}')
		case llm.ContentToolCall:
			dst = append(dst, `{"type":"tool_use","id":`...)
			dst = jsonw.String(dst, c.ID)
			dst = append(dst, `,"name":`...)
			dst = jsonw.String(dst, c.Name)
			dst = append(dst, `,"input":`...)
			dst = append(dst, c.PartialArguments()...)
			dst = append(dst, '}')
		case llm.ContentNative:
			if c.NativeAPI() != llm.APIAnthropic || len(c.Raw()) == 0 {
				dst = dst[:start]
				continue
			}
			dst = append(dst, c.Raw()...)
		default:
			dst = dst[:start]
			continue
		}
		first = false
	}
	sr, seq := messageStop(m.StopReason, m)
	dst = append(dst, `],"stop_reason":`...)
	dst = jsonw.String(dst, sr)
	dst = append(dst, `,"stop_sequence":`...)
	if seq == "" {
		dst = append(dst, "null"...)
	} else {
		dst = jsonw.String(dst, seq)
	}
	dst = append(dst, `,"usage":`...)
	u := m.Usage
	dst = appendUsage(dst, u.Input, u.CacheWrite, u.CacheRead, u.Output)
	return append(dst, '}'), nil
}

// clientSignature is the signature an A client gets for a thinking block
// of m: Anthropic's own signature unchanged, any other provider's wrapped
// as a gateway token, so that a replay can never
// reach Anthropic as a signed block and is restored only for its issuer.
func clientSignature(m *llm.Message, sig string) string {
	if sig == "" || m == nil || m.API == "" || m.API == llm.APIAnthropic || llm.IsSignatureToken(sig) {
		return sig
	}
	return llm.EncodeSignatureToken(m.API, sig)
}
