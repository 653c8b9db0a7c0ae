package compaction

import (
	"strings"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// toolResultCap caps one serialised tool result.
const toolResultCap = 2000

// omitted leads a serialisation whose oldest blocks were dropped.
const omitted = "[earlier conversation omitted]"

// Serialize renders agent messages as the plain-text transcript a summary request carries
// (after convertToLlm and the payload repairs): one block per part,
// separated by blank lines. When maxTokens > 0 and the text's estimate
// exceeds it, the oldest blocks are dropped behind a leading
// "[earlier conversation omitted]".
func Serialize(msgs []session.Message, maxTokens int) string {
	blocks := serializeBlocks(session.LLMMessages(msgs))
	total := 0
	for _, b := range blocks {
		total += len(b) + 2
	}
	if maxTokens > 0 && (total+3)/4 > maxTokens {
		budget := maxTokens*4 - len(omitted) - 2
		keep := len(blocks)
		size := 0
		for keep > 0 && size+len(blocks[keep-1])+2 <= budget {
			size += len(blocks[keep-1]) + 2
			keep--
		}
		blocks = append([]string{omitted}, blocks[keep:]...)
	}
	return strings.Join(blocks, "\n\n")
}

func serializeBlocks(msgs []llm.Message) []string {
	var out []string
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case llm.RoleAssistant:
			var thinking, text, calls []string
			for _, c := range m.Content {
				switch c.Type {
				case llm.ContentThinking:
					if c.Thinking != "" {
						thinking = append(thinking, c.Thinking)
					}
				case llm.ContentText:
					if c.Text != "" {
						text = append(text, c.Text)
					}
				case llm.ContentToolCall:
					calls = append(calls, toolCall(c))
				}
			}
			if len(thinking) > 0 {
				out = append(out, "[Assistant thinking]: "+strings.Join(thinking, "\n"))
			}
			if len(text) > 0 {
				out = append(out, "[Assistant]: "+strings.Join(text, "\n"))
			}
			if len(calls) > 0 {
				out = append(out, "[Assistant tool calls]: "+strings.Join(calls, "; "))
			}
		case llm.RoleToolResult:
			out = append(out, "[Tool result]: "+capText(contentText(m.Content), toolResultCap))
		default:
			if t := contentText(m.Content); t != "" {
				out = append(out, "[User]: "+t)
			}
		}
	}
	return out
}

// contentText joins text blocks; images become "[image]".
func contentText(cs []llm.Content) string {
	var parts []string
	for _, c := range cs {
		switch c.Type {
		case llm.ContentText:
			parts = append(parts, c.Text)
		case llm.ContentImage:
			parts = append(parts, "[image]")
		}
	}
	return strings.Join(parts, "\n")
}

// toolCall renders name(key=<json>, …) in the arguments' own key order.
func toolCall(c llm.Content) string {
	var b strings.Builder
	b.WriteString(c.Name)
	b.WriteByte('(')
	n := 0
	session.ScanObject(c.Arguments, func(key string, val []byte) {
		if n > 0 {
			b.WriteString(", ")
		}
		n++
		b.WriteString(key)
		b.WriteByte('=')
		b.Write(val)
	})
	b.WriteByte(')')
	return b.String()
}

// capText keeps the first 60 % and the last 40 % of max characters of a
// longer text, joined by "…". It cuts on rune boundaries.
func capText(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	head := max * 6 / 10
	tail := max - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}
