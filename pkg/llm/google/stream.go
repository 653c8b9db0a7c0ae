package google

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/ompgo/omp/internal/sse"
	"github.com/ompgo/omp/pkg/llm"
)

// safetyReasons are the finish / block reasons of the safety class.
var safetyReasons = map[string]bool{
	"SAFETY": true, "RECITATION": true, "BLOCKLIST": true, "PROHIBITED_CONTENT": true, "SPII": true,
	"IMAGE_SAFETY": true, "IMAGE_PROHIBITED_CONTENT": true, "IMAGE_RECITATION": true, "IMAGE_OTHER": true,
}

// MapFinishReason maps a Gemini finishReason to the canonical stop reason
// and reports whether it is of the safety class.
// STOP and MAX_TOKENS become toolUse when the turn called a tool.
func MapFinishReason(reason string, hadToolCall bool) (llm.StopReason, bool) {
	switch reason {
	case "STOP":
		if hadToolCall {
			return llm.StopToolUse, false
		}
		return llm.StopEnd, false
	case "MAX_TOKENS":
		if hadToolCall { // calls arrive whole, so they are complete (reference)
			return llm.StopToolUse, false
		}
		return llm.StopLength, false
	}
	return llm.StopError, safetyReasons[reason]
}

// Decoder turns streamGenerateContent chunks into canonical events on a
// Builder. It holds per-stream state; use one per response.
type Decoder struct {
	b          *llm.Builder
	api        string
	provider   string
	codeAssist bool
	names      *GenerateContentRequest // resolves rewritten tool names
	newID      func() string
	price      llm.Price

	finish     string // last finishReason seen
	sawContent bool
	pendingSig string // a bare signature that arrived before any block
	args       bytes.Buffer
	resp       response // reused chunk
	callIDs    map[string]struct{}
}

// DecoderOptions configure a Decoder.
type DecoderOptions struct {
	// CodeAssist unwraps {"response": …} chunks.
	CodeAssist bool
	// Request is the translated request, used to map rewritten tool names
	// back (may be nil).
	Request *GenerateContentRequest
	// NewID returns a fresh tool-call id for calls Gemini sends without one.
	NewID func() string
	// Price computes Usage.Cost (zero = no cost).
	Price llm.Price
}

// NewDecoder returns a Decoder that feeds b.
func NewDecoder(b *llm.Builder, opts DecoderOptions) *Decoder {
	m := b.Message()
	d := &Decoder{b: b, api: m.API, provider: m.Provider, codeAssist: opts.CodeAssist,
		names: opts.Request, newID: opts.NewID, price: opts.Price}
	if d.newID == nil {
		d.newID = randomCallID
	}
	return d
}

// Chunk handles one SSE data payload. It returns false once the stream has
// ended (an error event was emitted) or the consumer stopped.
func (d *Decoder) Chunk(data []byte) bool {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "[DONE]" {
		return !d.b.Ended()
	}
	r, apiErr, err := parseResponse(data, d.codeAssist, &d.resp)
	if err != nil {
		return d.b.Fail(d.badChunk(err))
	}
	if apiErr != nil {
		return d.b.Fail(streamError(d.provider, apiErr))
	}
	if r == nil {
		return !d.b.Ended()
	}
	return d.response(r)
}

func (d *Decoder) badChunk(err error) error {
	return &llm.UpstreamError{Provider: d.provider, Message: "malformed stream chunk", Err: err}
}

func (d *Decoder) response(r *response) bool {
	m := d.b.Message()
	if m.ResponseID == "" && r.ResponseID != "" {
		m.ResponseID = r.ResponseID
	}
	if len(r.Candidates) == 0 && r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		pf := r.PromptFeedback
		m.Stop = llm.StopDetail{Raw: pf.BlockReason, API: d.api, Safety: true}
		msg := "Request blocked by Google (" + pf.BlockReason + ")"
		if pf.BlockReasonMessage != "" {
			msg += ": " + pf.BlockReasonMessage
		}
		d.usage(r.UsageMetadata)
		return d.b.Fail(errors.New(msg))
	}
	if len(r.Candidates) > 0 {
		c := &r.Candidates[0]
		if c.Content != nil {
			for i := range c.Content.Parts {
				if !d.part(&c.Content.Parts[i]) {
					return false
				}
			}
		}
		if c.FinishReason != "" {
			d.finish = c.FinishReason
		}
	}
	d.usage(r.UsageMetadata)
	return !d.b.Ended()
}

func (d *Decoder) part(p *Part) bool {
	b := d.b
	switch {
	case p.Text != "":
		d.sawContent = true
		var ok bool
		if p.Thought {
			ok = b.Thinking(p.Text)
		} else {
			ok = b.Text(p.Text)
		}
		if sig := d.takeSignature(p.ThoughtSignature); sig != "" {
			setSignature(b.Open(), sig)
		}
		if !ok {
			return false
		}
	case p.ThoughtSignature != "" && p.FunctionCall == nil:
		d.attachSignature(p.ThoughtSignature)
	}
	if fc := p.FunctionCall; fc != nil {
		d.sawContent = true
		id := fc.ID
		if id == "" || d.hasCallID(id) {
			id = d.newID()
			d.hasCallID(id)
		}
		name := fc.Name
		if d.names != nil {
			name = d.names.ToolName(name)
		}
		if !b.StartToolCall(id, name) {
			return false
		}
		if p.ThoughtSignature != "" {
			b.Open().SetThoughtSignature(p.ThoughtSignature)
		}
		d.args.Reset()
		if a := bytes.TrimSpace(fc.Args); len(a) == 0 || string(a) == "null" || json.Compact(&d.args, a) != nil {
			d.args.Reset()
			d.args.WriteString("{}")
		}
		if !b.ToolArgs(d.args.String()) || !b.EndBlock() {
			return false
		}
	}
	return true
}

// takeSignature returns sig, or a pending bare signature when sig is empty.
func (d *Decoder) takeSignature(sig string) string {
	if sig == "" {
		sig, d.pendingSig = d.pendingSig, ""
	}
	return sig
}

// attachSignature puts a bare signature on the open block, else on the
// last text or thinking block, else keeps it for the next block.
func (d *Decoder) attachSignature(sig string) {
	if c := d.b.Open(); c != nil && c.Type != llm.ContentToolCall {
		setSignature(c, sig)
		return
	}
	content := d.b.Message().Content
	for i := len(content) - 1; i >= 0; i-- {
		switch content[i].Type {
		case llm.ContentText, llm.ContentThinking:
			setSignature(&content[i], sig)
			return
		case llm.ContentToolCall:
			i = 0 // a signature after a call belongs to what follows
		}
	}
	d.pendingSig = sig
}

func setSignature(c *llm.Content, sig string) {
	if c == nil || sig == "" {
		return
	}
	switch c.Type {
	case llm.ContentThinking:
		c.ThinkingSignature = sig
	case llm.ContentText:
		c.SetTextSignature(sig)
	}
}

// hasCallID reports whether id was already used in this stream, and
// records it.
func (d *Decoder) hasCallID(id string) bool {
	if d.callIDs == nil {
		d.callIDs = make(map[string]struct{})
	}
	if _, ok := d.callIDs[id]; ok {
		return true
	}
	d.callIDs[id] = struct{}{}
	return false
}

// usage records cumulative usageMetadata.
func (d *Decoder) usage(u *usageMetadata) {
	if u == nil {
		return
	}
	cached := u.CachedContentTokenCount
	d.b.Message().Usage = llm.Usage{
		Input:     max(u.PromptTokenCount-cached, 0),
		CacheRead: cached,
		Output:    u.CandidatesTokenCount + u.ThoughtsTokenCount,
		Reasoning: u.ThoughtsTokenCount,
	}.WithCost(d.price)
}

// End finishes the stream after a clean end of body: done with the mapped
// finish reason, or error when the reason is a failure or the body ended
// without content and without a finish reason.
func (d *Decoder) End() bool {
	b := d.b
	if b.Ended() {
		return false
	}
	m := b.Message()
	if d.finish == "" {
		if !d.sawContent {
			return b.Fail(&llm.UpstreamError{Provider: d.provider,
				Message: "stream ended without a finish reason (connection dropped or response truncated)"})
		}
		return b.Done(llm.StopEnd) // content without a finish reason is a normal end
	}
	reason, safety := MapFinishReason(d.finish, m.HasToolCall())
	m.Stop = llm.StopDetail{Raw: d.finish, API: d.api, Safety: safety}
	if reason == llm.StopError {
		m.ErrorMessage = "Generation failed with finish reason: " + d.finish
	}
	return b.Done(reason)
}

// consume reads the SSE body to its end, feeding d. Read failures end the
// stream with an error event (aborted when ctx was cancelled).
func (d *Decoder) consume(ctx context.Context, body io.Reader) {
	r := sse.NewReader(body)
	for {
		ev, err := r.Next()
		if err == io.EOF {
			d.End()
			return
		}
		if err != nil {
			if ctx.Err() != nil {
				d.b.Fail(ctx.Err())
			} else {
				d.b.Fail(&llm.UpstreamError{Provider: d.provider, Message: "stream read failed", Err: err})
			}
			return
		}
		if ev.Unterminated && !json.Valid(ev.Data) {
			d.b.Fail(&llm.UpstreamError{Provider: d.provider, Message: "stream ended mid-event"})
			return
		}
		if !d.Chunk(ev.Data) {
			return
		}
		if ctx.Err() != nil {
			d.b.Fail(ctx.Err())
			return
		}
	}
}
