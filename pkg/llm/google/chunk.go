package google

import "encoding/json"

// parseResponse decodes a GenerateContentResponse chunk into r (reset
// first). codeAssist unwraps {"response": …}. On any surprise it falls
// back to encoding/json.
func parseResponse(data []byte, codeAssist bool, r *response) (*response, *apiError, error) {
	*r = response{Candidates: r.Candidates[:0]}
	l := lexer{b: data}
	var err error
	if codeAssist {
		found := false
		err = l.object(func(k []byte) error {
			if string(k) == "response" && l.peek() == '{' {
				found = true
				return l.response(r)
			}
			if foldsTo(k, "response", "error") {
				return errSyntax // rare: let encoding/json handle it
			}
			_, err := l.skip()
			return err
		})
		if err == nil && l.peek() == 0 {
			if !found {
				return nil, nil, nil
			}
			return r, nil, nil
		}
	} else {
		err = l.response(r)
		if err == nil && l.peek() == 0 {
			return r, nil, nil
		}
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

func (l *lexer) response(r *response) error {
	return l.object(func(k []byte) error {
		var err error
		switch string(k) {
		case "candidates":
			r.Candidates = r.Candidates[:0]
			err = l.array(func() error {
				r.Candidates = append(r.Candidates, candidate{})
				return l.candidate(&r.Candidates[len(r.Candidates)-1])
			})
		case "usageMetadata":
			r.UsageMetadata = &usageMetadata{}
			err = l.usage(r.UsageMetadata)
		case "modelVersion":
			r.ModelVersion, err = l.str()
		case "responseId":
			r.ResponseID, err = l.str()
		case "promptFeedback":
			r.PromptFeedback = &promptFeedback{}
			err = l.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "blockReason":
					r.PromptFeedback.BlockReason, err = l.str()
				case "blockReasonMessage":
					r.PromptFeedback.BlockReasonMessage, err = l.str()
				default:
					if foldsTo(k, "blockReason", "blockReasonMessage") {
						return errSyntax
					}
					_, err = l.skip()
				}
				return err
			})
		case "error":
			return errSyntax // fall back
		default:
			if foldsTo(k, "candidates", "usageMetadata", "modelVersion", "responseId", "promptFeedback", "error") {
				return errSyntax
			}
			_, err = l.skip()
		}
		return err
	})
}

func (l *lexer) candidate(c *candidate) error {
	if l.peek() == 'n' {
		return l.literal("null")
	}
	return l.object(func(k []byte) error {
		var err error
		switch string(k) {
		case "content":
			if l.peek() == 'n' {
				return l.literal("null")
			}
			c.Content = &Content{}
			err = l.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "role":
					c.Content.Role, err = l.str()
				case "parts":
					c.Content.Parts = nil
					if l.peek() == 'n' {
						return l.literal("null")
					}
					err = l.array(func() error {
						c.Content.Parts = append(c.Content.Parts, Part{})
						return l.part(&c.Content.Parts[len(c.Content.Parts)-1])
					})
				default:
					if foldsTo(k, "role", "parts") {
						return errSyntax
					}
					_, err = l.skip()
				}
				return err
			})
		case "finishReason":
			c.FinishReason, err = l.str()
		default:
			if foldsTo(k, "content", "finishReason") {
				return errSyntax
			}
			_, err = l.skip()
		}
		return err
	})
}

func (l *lexer) part(p *Part) error {
	if l.peek() == 'n' {
		return l.literal("null")
	}
	return l.object(func(k []byte) error {
		var err error
		switch string(k) {
		case "text":
			p.Text, err = l.str()
		case "thought":
			p.Thought, err = l.boolean()
		case "thoughtSignature":
			p.ThoughtSignature, err = l.str()
		case "functionCall":
			if l.peek() == 'n' {
				return l.literal("null")
			}
			p.FunctionCall = &FunctionCall{}
			err = l.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "id":
					p.FunctionCall.ID, err = l.str()
				case "name":
					p.FunctionCall.Name, err = l.str()
				case "args":
					var raw []byte
					raw, err = l.skip()
					p.FunctionCall.Args = raw
				default:
					if foldsTo(k, "id", "name", "args") {
						return errSyntax
					}
					_, err = l.skip()
				}
				return err
			})
		default:
			if foldsTo(k, "text", "thought", "thoughtSignature", "functionCall", "inlineData", "fileData", "functionResponse") {
				return errSyntax
			}
			_, err = l.skip()
		}
		return err
	})
}

func (l *lexer) usage(u *usageMetadata) error {
	return l.object(func(k []byte) error {
		var err error
		switch string(k) {
		case "promptTokenCount":
			u.PromptTokenCount, err = l.integer()
		case "candidatesTokenCount":
			u.CandidatesTokenCount, err = l.integer()
		case "thoughtsTokenCount":
			u.ThoughtsTokenCount, err = l.integer()
		case "cachedContentTokenCount":
			u.CachedContentTokenCount, err = l.integer()
		case "totalTokenCount":
			u.TotalTokenCount, err = l.integer()
		default:
			if foldsTo(k, "promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount", "cachedContentTokenCount", "totalTokenCount") {
				return errSyntax
			}
			_, err = l.skip()
		}
		return err
	})
}
