package session

import (
	"encoding/json"
	"time"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/pinative"
)

// Context is what a session path replays to.
type Context struct {
	// Messages are the agent messages sent to the model, in order.
	Messages []Message
	// ThinkingLevel is the latest thinking_level_change ("" when none; a
	// null level reads as "off", as 18.1.21 writes it).
	ThinkingLevel string
	// Models maps a role ("default", "smol", …) to "provider/id".
	Models map[string]string
	// Model is the active session model: the latest model_change whose
	// role is absent, "default" or "temporary".
	Model string
	// Mode is the latest mode_change mode ("" when none).
	Mode string
}

// ActivePath returns the entries from a root to the leaf, stopping at a
// repeated id (cycle guard).
func (f *File) ActivePath() []*Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pathLocked(f.leaf)
}

// PathTo returns the entries from a root to id (empty for "" or an
// unknown id).
func (f *File) PathTo(id string) []*Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pathLocked(id)
}

func (f *File) pathLocked(leaf string) []*Entry {
	// A path without a cycle visits each entry at most once, so a walk
	// longer than the tree has one; only then is a set of seen ids worth
	// its cost (a long session's path is thousands of entries).
	var rev []*Entry
	for id := leaf; id != ""; {
		e, ok := f.byID[id]
		if !ok {
			break
		}
		if len(rev) == len(f.byID) {
			rev = f.cyclePathLocked(leaf)
			break
		}
		rev = append(rev, e)
		id = e.ParentID
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// cyclePathLocked is the walk from leaf towards a root, leaf first,
// stopping at a repeated id.
func (f *File) cyclePathLocked(leaf string) []*Entry {
	var rev []*Entry
	seen := map[string]bool{}
	for id := leaf; id != "" && !seen[id]; {
		e, ok := f.byID[id]
		if !ok {
			break
		}
		seen[id] = true
		rev = append(rev, e)
		id = e.ParentID
	}
	return rev
}

// BuildContext replays the path to the leaf: replay state, the
// latest compaction (its summary, then the kept entries from
// firstKeptEntryId, then everything after it), a later reset_boundary,
// and the conversion of message, custom_message and branch_summary
// entries to agent messages.
func (f *File) BuildContext() Context {
	path := f.ActivePath()
	ctx := Context{Models: map[string]string{}}
	start := 0
	lastCompaction := -1
	for i, e := range path {
		switch e.Type {
		case TypeCompaction:
			lastCompaction = i
		case TypeResetBoundary:
			if i > lastCompaction {
				start = i + 1
			}
		}
		f.replay(e, &ctx)
	}

	var b batch
	if lastCompaction >= 0 && lastCompaction >= start-1 {
		c := path[lastCompaction]
		var comp Compaction
		_ = c.Decode(&comp)
		b.synth(summaryMessage(RoleCompactionSummary, c, comp.Summary, comp.TokensBefore))
		kept := -1
		for i := 0; i < lastCompaction; i++ {
			if path[i].ID == comp.FirstKeptEntryID {
				kept = i
				break
			}
		}
		if kept >= 0 {
			for _, e := range path[kept:lastCompaction] {
				b.add(e)
			}
		}
		if start < lastCompaction+1 {
			start = lastCompaction + 1
		}
	}
	for _, e := range path[start:] {
		b.add(e)
	}
	b.decode()
	f.rehydrate(b.out)
	f.remember(&b)
	ctx.Messages = b.filter()
	return ctx
}

func (f *File) replay(e *Entry, ctx *Context) {
	switch e.Type {
	case TypeThinkingLevelChange:
		var v struct {
			ThinkingLevel *string `json:"thinkingLevel"`
		}
		if e.Decode(&v) == nil {
			ctx.ThinkingLevel = "off"
			if v.ThinkingLevel != nil {
				ctx.ThinkingLevel = *v.ThinkingLevel
			}
		}
	case TypeModelChange:
		var mc ModelChange
		if e.Decode(&mc) != nil || mc.Key() == "" || mc.Role == "fallback" {
			return
		}
		role := mc.Role
		if role == "" || role == "temporary" {
			role = "default"
		}
		ctx.Models[role] = mc.Key()
		if role == "default" {
			ctx.Model = mc.Key()
		}
	case TypeModeChange:
		var v struct {
			Mode string `json:"mode"`
		}
		if e.Decode(&v) == nil {
			ctx.Mode = v.Mode
			if v.Mode == "none" {
				ctx.Mode = ""
			}
		}
	}
}

// batch collects the context messages of a path. Message entries (nearly
// all of a long session) are decoded together by pinative.DecodeMessages
// in decode, the rest right away.
type batch struct {
	out  []Message
	ents []*Entry // the entry of each message of out (nil: synthesised)
	idx  []int    // positions in out awaiting the batch decode
	raws [][]byte // their raw messages
}

func (b *batch) add(e *Entry) {
	defer func() {
		for len(b.ents) < len(b.out) {
			b.ents = append(b.ents, e)
		}
	}()
	if e.Type == TypeMessage {
		if raw := e.field("message"); len(raw) > 0 {
			b.idx = append(b.idx, len(b.out))
			b.raws = append(b.raws, raw)
			b.out = append(b.out, Message{Raw: raw})
		}
		return
	}
	b.out = appendEntryMessage(b.out, e)
}

// synth appends a message that no entry holds verbatim.
func (b *batch) synth(m Message) {
	b.out = append(b.out, m)
	b.ents = append(b.ents, nil)
}

// valid reports whether a decoded message of the batch counts.
func valid(m Message) bool { return m.Role != "" && (m.LLM != nil || !isLLMRole(m.Role)) }

// filter drops the messages that failed to decode.
func (b *batch) filter() []Message {
	out := make([]Message, 0, len(b.out))
	for _, m := range b.out {
		if valid(m) {
			out = append(out, m)
		}
	}
	return out
}

// decode decodes the collected messages in place.
func (b *batch) decode() {
	if len(b.raws) > 0 {
		llms, ok := pinative.DecodeMessages(b.raws)
		for k, i := range b.idx {
			if ok[k] {
				b.out[i].Role, b.out[i].LLM = string(llms[k].Role), &llms[k]
			} else if m, err := DecodeMessage(b.out[i].Raw); err == nil {
				b.out[i] = m
			}
		}
	}
}

// appendEntryMessage converts a context-producing entry.
func appendEntryMessage(out []Message, e *Entry) []Message {
	switch e.Type {
	case TypeMessage:
		raw := e.field("message")
		if len(raw) == 0 {
			return out
		}
		m, err := DecodeMessage(raw)
		if err != nil {
			return out
		}
		return append(out, m)
	case TypeCustomMessage:
		var cm CustomMessage
		if e.Decode(&cm) != nil {
			return out
		}
		raw, _ := json.Marshal(struct {
			Role       string          `json:"role"`
			CustomType string          `json:"customType"`
			Content    json.RawMessage `json:"content"`
			Display    bool            `json:"display"`
			Timestamp  int64           `json:"timestamp"`
		}{RoleCustom, cm.CustomType, cm.Content, cm.Display, entryMillis(e)})
		m, err := DecodeMessage(raw)
		if err != nil {
			return out
		}
		return append(out, m)
	case TypeBranchSummary:
		var bs BranchSummary
		if e.Decode(&bs) != nil {
			return out
		}
		return append(out, summaryMessage(RoleBranchSummary, e, bs.Summary, 0))
	}
	return out
}

func summaryMessage(role string, e *Entry, summary string, tokensBefore int64) Message {
	v := map[string]any{"role": role, "summary": summary, "timestamp": entryMillis(e)}
	if role == RoleCompactionSummary {
		v["tokensBefore"] = tokensBefore
	} else {
		var bs BranchSummary
		_ = e.Decode(&bs)
		v["fromId"] = bs.FromID
	}
	raw, _ := json.Marshal(v)
	m, _ := DecodeMessage(raw)
	return m
}

func entryMillis(e *Entry) int64 {
	t, err := time.Parse(time.RFC3339Nano, e.Timestamp)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

// LLMMessages converts agent messages to the provider payload and
// applies the context repairs: assistant messages that ended in error or
// abort are left out with the tool results answering them, and a tool call
// without a result gets a synthetic error result.
func LLMMessages(msgs []Message) []llm.Message {
	out := make([]llm.Message, 0, len(msgs))
	dropped := map[string]bool{}
	answered := map[string]bool{}
	for i := range msgs {
		if m := msgs[i].LLM; m != nil && m.Role == llm.RoleToolResult {
			answered[m.ToolCallID] = true
		}
	}
	for i := range msgs {
		m := msgs[i].LLM
		if m == nil {
			continue
		}
		switch m.Role {
		case llm.RoleAssistant:
			if m.StopReason == llm.StopError || m.StopReason == llm.StopAborted {
				for _, c := range m.Content {
					if c.Type == llm.ContentToolCall {
						dropped[c.ID] = true
					}
				}
				continue
			}
			out = append(out, *m)
			for _, c := range m.Content {
				if c.Type == llm.ContentToolCall && !answered[c.ID] {
					out = append(out, llm.Message{Role: llm.RoleToolResult, ToolCallID: c.ID, ToolName: c.Name,
						Content: []llm.Content{llm.Text("No result provided")}, IsError: true, Timestamp: m.Timestamp})
				}
			}
		case llm.RoleToolResult:
			if dropped[m.ToolCallID] {
				continue
			}
			out = append(out, *m)
		default:
			out = append(out, *m)
		}
	}
	return out
}
