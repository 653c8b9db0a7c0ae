package llm

import (
	"encoding/json"
	"fmt"
)

// ContentType names a content block kind. The values are the pi-native
// (P) wire names.
type ContentType string

// Content block kinds.
const (
	ContentText             ContentType = "text"
	ContentImage            ContentType = "image"
	ContentThinking         ContentType = "thinking"
	ContentRedactedThinking ContentType = "redactedThinking"
	ContentToolCall         ContentType = "toolCall"
	// ContentNative is a provider-native block with no canonical slot (for
	// example an Anthropic document, server_tool_use or web_search_tool_result
	// block). Its Raw (see ContentExtra) holds it verbatim and NativeAPI
	// names the wire family that can replay it; every other family drops it
	// or renders a placeholder. Native builds one.
	ContentNative ContentType = "native"
)

// CacheControl is a prompt-cache breakpoint (Anthropic cache_control).
type CacheControl struct {
	// TTL is "" (provider default, 5m), "5m" or "1h".
	TTL string
}

// Content is one content block. It is a flat union: Type says which fields
// are meaningful. A flat struct keeps the hot path free of interface
// boxing and lets a Message's content slice be reused between events.
//
// The fields most blocks use are inline; the rarely set ones live in
// Extra, behind one pointer, which makes a Content 176 bytes instead of
// 312 (a decoded 300-message request allocates and scans that much less).
// Read them with the nil-safe accessor methods (TextSignature, ItemID, URL,
// Detail, ThoughtSignature, CustomWireName, Raw, NativeAPI, Cache) and
// write them with the Set* methods.
type Content struct {
	Type ContentType

	// Text holds the text of a ContentText block.
	Text string

	// Thinking holds the reasoning text of a ContentThinking block.
	Thinking string
	// ThinkingSignature is the provider's opaque signature of the thinking
	// block (Anthropic signature, a gateway token for foreign reasoning, …).
	// It must be replayed byte-for-byte.
	ThinkingSignature string

	// Data is the redacted-thinking payload (ContentRedactedThinking) or
	// the standard base64 image bytes (ContentImage).
	Data string
	// MimeType is the image media type, e.g. "image/png".
	MimeType string

	// ID is the tool-call id of a ContentToolCall block.
	ID string
	// Name is the tool name of a ContentToolCall block.
	Name string
	// Arguments is the parsed tool arguments: always a JSON object once the
	// call has ended ({} when empty; {"__raw":"…"} when the model's text was
	// not valid JSON). It is nil while a streamed call is still open; see
	// PartialArguments.
	Arguments json.RawMessage
	// ArgumentsText is the model's own argument text, byte-for-byte as it
	// was streamed. Encoders that emit an argument string emit this when
	// it is set; decoded request history may leave it empty (use
	// Arguments then).
	ArgumentsText string

	// Extra holds the rarely set fields; nil when none is set. Copies of
	// a Content share it, so it is never modified in place: the Set*
	// methods give the block a fresh copy. A literal may set it to a new
	// ContentExtra.
	Extra *ContentExtra
}

// ContentExtra holds the rarely set fields of a Content.
type ContentExtra struct {
	// TextSignature is an opaque provider signature of a text block
	// (OpenAI Responses message metadata).
	TextSignature string
	// ItemID is the provider item id of a reasoning block (Responses).
	ItemID string
	// URL is an image URL kept as a URL (never fetched by this layer).
	URL string
	// Detail is the OpenAI image resolution hint ("auto", "low", "high").
	Detail string
	// ThoughtSignature is Gemini's opaque signature attached to this part.
	ThoughtSignature string
	// CustomWireName is the wire name of an OpenAI custom (freeform) tool.
	CustomWireName string
	// Raw is the verbatim provider JSON of a ContentNative block.
	Raw json.RawMessage
	// NativeAPI is the API family that produced Raw (e.g. APIAnthropic).
	NativeAPI string
	// Cache is an optional prompt-cache breakpoint on this block.
	Cache *CacheControl
}

// TextSignature returns the block's text signature (see ContentExtra).
func (c *Content) TextSignature() string {
	if c.Extra == nil {
		return ""
	}
	return c.Extra.TextSignature
}

// ItemID returns the block's provider item id (see ContentExtra).
func (c *Content) ItemID() string {
	if c.Extra == nil {
		return ""
	}
	return c.Extra.ItemID
}

// URL returns the image URL (see ContentExtra).
func (c *Content) URL() string {
	if c.Extra == nil {
		return ""
	}
	return c.Extra.URL
}

// Detail returns the image resolution hint (see ContentExtra).
func (c *Content) Detail() string {
	if c.Extra == nil {
		return ""
	}
	return c.Extra.Detail
}

// ThoughtSignature returns the Gemini part signature (see ContentExtra).
func (c *Content) ThoughtSignature() string {
	if c.Extra == nil {
		return ""
	}
	return c.Extra.ThoughtSignature
}

// CustomWireName returns the custom tool's wire name (see ContentExtra).
func (c *Content) CustomWireName() string {
	if c.Extra == nil {
		return ""
	}
	return c.Extra.CustomWireName
}

// Raw returns the verbatim JSON of a native block (see ContentExtra).
func (c *Content) Raw() json.RawMessage {
	if c.Extra == nil {
		return nil
	}
	return c.Extra.Raw
}

// NativeAPI returns the API family of a native block (see ContentExtra).
func (c *Content) NativeAPI() string {
	if c.Extra == nil {
		return ""
	}
	return c.Extra.NativeAPI
}

// Cache returns the block's prompt-cache breakpoint, or nil.
func (c *Content) Cache() *CacheControl {
	if c.Extra == nil {
		return nil
	}
	return c.Extra.Cache
}

// edit returns a private copy of c's extra fields for writing (nil, and
// nothing allocated, when zero says the write would not change a block
// without extra fields).
func (c *Content) edit(zero bool) *ContentExtra {
	if c.Extra == nil && zero {
		return nil
	}
	e := new(ContentExtra)
	if c.Extra != nil {
		*e = *c.Extra
	}
	c.Extra = e
	return e
}

// SetTextSignature sets the block's text signature.
func (c *Content) SetTextSignature(v string) {
	if e := c.edit(v == ""); e != nil {
		e.TextSignature = v
	}
}

// SetItemID sets the block's provider item id.
func (c *Content) SetItemID(v string) {
	if e := c.edit(v == ""); e != nil {
		e.ItemID = v
	}
}

// SetURL sets the image URL.
func (c *Content) SetURL(v string) {
	if e := c.edit(v == ""); e != nil {
		e.URL = v
	}
}

// SetDetail sets the image resolution hint.
func (c *Content) SetDetail(v string) {
	if e := c.edit(v == ""); e != nil {
		e.Detail = v
	}
}

// SetThoughtSignature sets the Gemini part signature.
func (c *Content) SetThoughtSignature(v string) {
	if e := c.edit(v == ""); e != nil {
		e.ThoughtSignature = v
	}
}

// SetCustomWireName sets the custom tool's wire name.
func (c *Content) SetCustomWireName(v string) {
	if e := c.edit(v == ""); e != nil {
		e.CustomWireName = v
	}
}

// SetNative sets the verbatim JSON of a native block and its API family.
func (c *Content) SetNative(api string, raw json.RawMessage) {
	if e := c.edit(api == "" && raw == nil); e != nil {
		e.NativeAPI, e.Raw = api, raw
	}
}

// SetCache sets the block's prompt-cache breakpoint.
func (c *Content) SetCache(v *CacheControl) {
	if e := c.edit(v == nil); e != nil {
		e.Cache = v
	}
}

// Native returns a provider-native block holding raw, replayable by api.
func Native(api string, raw json.RawMessage) Content {
	return Content{Type: ContentNative, Extra: &ContentExtra{Raw: raw, NativeAPI: api}}
}

// Text returns a text block.
func Text(s string) Content { return Content{Type: ContentText, Text: s} }

// Image returns an inline base64 image block.
func Image(mimeType, base64Data string) Content {
	return Content{Type: ContentImage, MimeType: mimeType, Data: base64Data}
}

// ToolCall returns a finished tool-call block whose arguments are the JSON
// object args (its text is also used as ArgumentsText).
func ToolCall(id, name string, args json.RawMessage) Content {
	return Content{Type: ContentToolCall, ID: id, Name: name, Arguments: args, ArgumentsText: string(args)}
}

// PartialArguments returns the best current view of a tool call's
// arguments: Arguments when set, otherwise a tolerant parse of the
// ArgumentsText streamed so far.
func (c *Content) PartialArguments() json.RawMessage {
	if c.Arguments != nil {
		return c.Arguments
	}
	return ParsePartialJSON(c.ArgumentsText)
}

// wireContent is the pi-native JSON shape of a content block.
type wireContent struct {
	Type              ContentType     `json:"type"`
	Text              *string         `json:"text,omitempty"`
	TextSignature     string          `json:"textSignature,omitempty"`
	Thinking          *string         `json:"thinking,omitempty"`
	ThinkingSignature string          `json:"thinkingSignature,omitempty"`
	ItemID            string          `json:"itemId,omitempty"`
	Data              *string         `json:"data,omitempty"`
	MimeType          string          `json:"mimeType,omitempty"`
	URL               string          `json:"url,omitempty"`
	Detail            string          `json:"detail,omitempty"`
	ID                *string         `json:"id,omitempty"`
	Name              *string         `json:"name,omitempty"`
	Arguments         json.RawMessage `json:"arguments,omitempty"`
	ThoughtSignature  string          `json:"thoughtSignature,omitempty"`
	CustomWireName    string          `json:"customWireName,omitempty"`
	Raw               json.RawMessage `json:"raw,omitempty"`
	NativeAPI         string          `json:"api,omitempty"`
}

// MarshalJSON encodes the block in its pi-native shape:
// only the fields of its Type, with the always-present ones kept when empty.
func (c Content) MarshalJSON() ([]byte, error) {
	w := wireContent{Type: c.Type}
	switch c.Type {
	case ContentText:
		w.Text, w.TextSignature = &c.Text, c.TextSignature()
	case ContentThinking:
		w.Thinking, w.ThinkingSignature, w.ItemID = &c.Thinking, c.ThinkingSignature, c.ItemID()
	case ContentRedactedThinking:
		w.Data = &c.Data
	case ContentImage:
		if c.Data != "" || c.URL() == "" {
			w.Data = &c.Data
		}
		w.MimeType, w.URL, w.Detail = c.MimeType, c.URL(), c.Detail()
	case ContentToolCall:
		w.ID, w.Name = &c.ID, &c.Name
		w.Arguments = c.PartialArguments()
		w.ThoughtSignature, w.CustomWireName = c.ThoughtSignature(), c.CustomWireName()
	case ContentNative:
		w.Raw, w.NativeAPI = c.Raw(), c.NativeAPI()
	default:
		return nil, fmt.Errorf("llm: marshal content: unknown type %q", c.Type)
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes a pi-native content block. Unknown fields are
// ignored; unknown types are an error.
func (c *Content) UnmarshalJSON(b []byte) error {
	var w wireContent
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = Content{Type: w.Type, ThinkingSignature: w.ThinkingSignature, MimeType: w.MimeType}
	x := ContentExtra{TextSignature: w.TextSignature, ItemID: w.ItemID, URL: w.URL, Detail: w.Detail,
		ThoughtSignature: w.ThoughtSignature, CustomWireName: w.CustomWireName,
		Raw: w.Raw, NativeAPI: w.NativeAPI}
	if !x.IsZero() {
		e := x
		c.Extra = &e
	}
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	c.Text, c.Thinking, c.Data, c.ID, c.Name = deref(w.Text), deref(w.Thinking), deref(w.Data), deref(w.ID), deref(w.Name)
	switch c.Type {
	case ContentText, ContentThinking, ContentRedactedThinking, ContentImage, ContentNative:
	case ContentToolCall:
		c.Arguments, c.ArgumentsText = NormalizeArguments(w.Arguments)
	default:
		return fmt.Errorf("llm: unknown content type %q", w.Type)
	}
	return nil
}

// IsZero reports whether no field of e is set.
func (e *ContentExtra) IsZero() bool {
	return e.TextSignature == "" && e.ItemID == "" && e.URL == "" && e.Detail == "" &&
		e.ThoughtSignature == "" && e.CustomWireName == "" && e.Raw == nil && e.NativeAPI == "" && e.Cache == nil
}
