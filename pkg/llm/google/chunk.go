package google

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/ompgo/omp/internal/jsonr"
)

// errFallback makes the one-pass chunk reader hand the chunk to
// encoding/json: an error object, a value of an unexpected type, a key
// encoding/json would match case-insensitively.
var errFallback = errors.New("google: chunk needs encoding/json")

// parseResponse decodes a GenerateContentResponse chunk into r (reset
// first). codeAssist unwraps {"response": …}. It reads the one hot shape,
// streamed chunks, in one pass on the shared reader (encoding/json costs
// several microseconds per chunk through reflection and a validation
// pre-pass); on any surprise it falls back to encoding/json, so the two
// always agree.
func parseResponse(data []byte, codeAssist bool, r *response) (*response, *apiError, error) {
	*r = response{Candidates: r.Candidates[:0]}
	// data is only valid until the next SSE event: the strings read are
	// views of one private copy.
	var l jsonr.Reader
	l.Reset(bytes.Clone(data))
	if codeAssist {
		found := false
		err := l.Object(func(k []byte) error {
			if string(k) == "response" && l.Peek() == '{' {
				found = true
				return response1(&l, r)
			}
			if jsonr.FoldsTo(k, "response", "error") {
				return errFallback // rare: let encoding/json handle it
			}
			l.Skip()
			return nil
		})
		if err == nil && l.End() == nil {
			if !found {
				return nil, nil, nil
			}
			return r, nil, nil
		}
	} else if response1(&l, r) == nil && l.End() == nil {
		return r, nil, nil
	}
	// Fallback: the exact encoding/json semantics.
	*r = response{}
	if codeAssist {
		var c codeAssistChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return nil, nil, err
		}
		return c.Response, c.Error, nil
	}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, nil, err
	}
	return r, r.Error, nil
}

func response1(l *jsonr.Reader, r *response) error {
	return l.Object(func(k []byte) error {
		switch string(k) {
		case "candidates":
			r.Candidates = r.Candidates[:0]
			return l.Array(func() error {
				r.Candidates = append(r.Candidates, candidate{})
				return candidate1(l, &r.Candidates[len(r.Candidates)-1])
			})
		case "usageMetadata":
			r.UsageMetadata = &usageMetadata{}
			return usage1(l, r.UsageMetadata)
		case "modelVersion":
			r.ModelVersion = l.String()
		case "responseId":
			r.ResponseID = l.String()
		case "promptFeedback":
			r.PromptFeedback = &promptFeedback{}
			return l.Object(func(k []byte) error {
				switch string(k) {
				case "blockReason":
					r.PromptFeedback.BlockReason = l.String()
				case "blockReasonMessage":
					r.PromptFeedback.BlockReasonMessage = l.String()
				default:
					if jsonr.FoldsTo(k, "blockReason", "blockReasonMessage") {
						return errFallback
					}
					l.Skip()
				}
				return nil
			})
		case "error":
			return errFallback
		default:
			if jsonr.FoldsTo(k, "candidates", "usageMetadata", "modelVersion", "responseId", "promptFeedback", "error") {
				return errFallback
			}
			l.Skip()
		}
		return nil
	})
}

func candidate1(l *jsonr.Reader, c *candidate) error {
	if l.Null() {
		return nil
	}
	return l.Object(func(k []byte) error {
		switch string(k) {
		case "content":
			if l.Null() {
				return nil
			}
			c.Content = &Content{}
			return l.Object(func(k []byte) error {
				switch string(k) {
				case "role":
					c.Content.Role = l.String()
				case "parts":
					c.Content.Parts = nil
					if l.Null() {
						return nil
					}
					return l.Array(func() error {
						c.Content.Parts = append(c.Content.Parts, Part{})
						return part1(l, &c.Content.Parts[len(c.Content.Parts)-1])
					})
				default:
					if jsonr.FoldsTo(k, "role", "parts") {
						return errFallback
					}
					l.Skip()
				}
				return nil
			})
		case "finishReason":
			c.FinishReason = l.String()
		default:
			if jsonr.FoldsTo(k, "content", "finishReason") {
				return errFallback
			}
			l.Skip()
		}
		return nil
	})
}

func part1(l *jsonr.Reader, p *Part) error {
	if l.Null() {
		return nil
	}
	return l.Object(func(k []byte) error {
		switch string(k) {
		case "text":
			p.Text = l.String()
		case "thought":
			p.Thought = l.Bool()
		case "thoughtSignature":
			p.ThoughtSignature = l.String()
		case "functionCall":
			if l.Null() {
				return nil
			}
			p.FunctionCall = &FunctionCall{}
			return l.Object(func(k []byte) error {
				switch string(k) {
				case "id":
					p.FunctionCall.ID = l.String()
				case "name":
					p.FunctionCall.Name = l.String()
				case "args":
					p.FunctionCall.Args = l.Raw()
				default:
					if jsonr.FoldsTo(k, "id", "name", "args") {
						return errFallback
					}
					l.Skip()
				}
				return nil
			})
		default:
			if jsonr.FoldsTo(k, "text", "thought", "thoughtSignature", "functionCall", "inlineData", "fileData", "functionResponse") {
				return errFallback
			}
			l.Skip()
		}
		return nil
	})
}

func usage1(l *jsonr.Reader, u *usageMetadata) error {
	return l.Object(func(k []byte) error {
		switch string(k) {
		case "promptTokenCount":
			u.PromptTokenCount = l.IntExact()
		case "candidatesTokenCount":
			u.CandidatesTokenCount = l.IntExact()
		case "thoughtsTokenCount":
			u.ThoughtsTokenCount = l.IntExact()
		case "cachedContentTokenCount":
			u.CachedContentTokenCount = l.IntExact()
		case "totalTokenCount":
			u.TotalTokenCount = l.IntExact()
		default:
			if jsonr.FoldsTo(k, "promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount", "cachedContentTokenCount", "totalTokenCount") {
				return errFallback
			}
			l.Skip()
		}
		return nil
	})
}
