package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/ompgo/omp/pkg/llm"
)

// Provider wraps an llm.Provider so that every request it sends is
// obfuscated first (turns, compaction and branch summaries alike, as
// long as they go through it). The caller's request is never modified.
type Provider struct {
	llm.Provider
	Secrets *Obfuscator
}

// Wrap returns p obfuscating through o, or p itself when o has no secrets.
func Wrap(p llm.Provider, o *Obfuscator) llm.Provider {
	if !o.HasSecrets() {
		return p
	}
	return Provider{Provider: p, Secrets: o}
}

// Stream obfuscates req and streams it through the wrapped provider.
func (p Provider) Stream(ctx context.Context, req *llm.Request, model *llm.Model, cred llm.Credential) (*llm.Stream, error) {
	return p.Provider.Stream(ctx, p.Secrets.Request(req), model, cred)
}

// Request returns req with every secret obfuscated: the system prompt,
// user, assistant and tool-result text, thinking (whose signature is
// dropped when its text changed: it no longer matches), and tool-call
// arguments. Blocks that need no change are shared with req; req itself is
// untouched. Images and opaque payloads are never walked.
func (o *Obfuscator) Request(req *llm.Request) *llm.Request {
	if !o.HasSecrets() || req == nil {
		return req
	}
	o.mu.Lock()
	passive := o.passive
	o.mu.Unlock()
	if passive {
		o.observe(req)
		return req
	}
	out := *req
	for i, b := range req.System {
		if t := o.Obfuscate(b.Text); t != b.Text {
			if &out.System[0] == &req.System[0] {
				out.System = slices.Clone(req.System)
			}
			out.System[i].Text = t
		}
	}
	for i := range req.Messages {
		content, changed := o.content(req.Messages[i].Content)
		if !changed {
			continue
		}
		if len(out.Messages) > 0 && &out.Messages[0] == &req.Messages[0] {
			out.Messages = slices.Clone(req.Messages)
		}
		out.Messages[i].Content = content
	}
	return &out
}

// SetPassive makes the obfuscator observe requests instead of rewriting
// them (secrets.enabled off): the placeholders earlier turns hold are
// still restored in tool arguments, and nothing else changes.
func (o *Obfuscator) SetPassive(passive bool) {
	if o != nil {
		o.mu.Lock()
		o.passive = passive
		o.mu.Unlock()
	}
}

// observe records the known placeholders of every text of req as sent.
func (o *Obfuscator) observe(req *llm.Request) {
	for _, b := range req.System {
		o.Observe(b.Text)
	}
	for _, m := range req.Messages {
		for _, c := range m.Content {
			switch c.Type {
			case llm.ContentText:
				o.Observe(c.Text)
			case llm.ContentThinking:
				o.Observe(c.Thinking)
			case llm.ContentToolCall:
				o.Observe(string(c.Arguments))
			}
		}
	}
}

// content obfuscates one message's blocks, copying on the first change.
func (o *Obfuscator) content(in []llm.Content) ([]llm.Content, bool) {
	var out []llm.Content
	set := func(i int, c llm.Content) {
		if out == nil {
			out = slices.Clone(in)
		}
		out[i] = c
	}
	for i, c := range in {
		switch c.Type {
		case llm.ContentText:
			if t := o.Obfuscate(c.Text); t != c.Text {
				c.Text = t
				set(i, c)
			}
		case llm.ContentThinking:
			if t := o.Obfuscate(c.Thinking); t != c.Thinking {
				c.Thinking, c.ThinkingSignature = t, ""
				set(i, c)
			}
		case llm.ContentToolCall:
			args := MapJSONStrings(c.Arguments, o.Obfuscate)
			text := c.ArgumentsText
			if text != "" {
				text = string(MapJSONStrings(json.RawMessage(text), o.Obfuscate))
			}
			if !bytes.Equal(args, c.Arguments) || text != c.ArgumentsText {
				c.Arguments, c.ArgumentsText = args, text
				set(i, c)
			}
		}
	}
	return out, out != nil
}

// RestoreArguments restores placeholders in a tool call's arguments (the
// only place a JSON walk runs inbound), before validation and execution.
func (o *Obfuscator) RestoreArguments(args json.RawMessage) json.RawMessage {
	if o == nil {
		return args
	}
	return MapJSONStrings(args, o.Restore)
}

// MapJSONStrings returns raw with every JSON string (keys included) passed
// through f, byte-for-byte unchanged elsewhere: key order, numbers and
// spacing survive. A string f leaves alone keeps its original escaping.
// Malformed JSON is returned as it is.
//
// encoding/json's token stream finds the strings: a string token ends at
// the decoder's offset, and between the previous token's end and its
// opening quote there is only whitespace and a ',' or ':'.
func MapJSONStrings(raw json.RawMessage, f func(string) string) json.RawMessage {
	if bytes.IndexByte(raw, '"') < 0 || !json.Valid(raw) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers are skipped, never converted
	var out []byte
	last, prev := 0, 0 // raw[:last] is settled; prev is where the previous token ended
	for {
		tok, err := dec.Token()
		if err != nil {
			break // io.EOF: raw is one valid value
		}
		end := int(dec.InputOffset())
		if s, ok := tok.(string); ok {
			if t := f(s); t != s {
				start := prev + bytes.IndexByte(raw[prev:end], '"')
				if out == nil {
					out = make([]byte, 0, len(raw)+16)
				}
				out = append(out, raw[last:start]...)
				out = appendJSONString(out, t)
				last = end
			}
		}
		prev = end
	}
	if out == nil {
		return raw
	}
	return append(out, raw[last:]...)
}

// appendJSONString appends s as a JSON string without HTML escaping.
func appendJSONString(dst []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return append(dst, bytes.TrimRight(b.Bytes(), "\n")...)
}
