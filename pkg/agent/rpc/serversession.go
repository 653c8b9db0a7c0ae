package rpc

import (
	"context"
	"encoding/json"
	"path/filepath"

	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
)

// The RPC mode's session commands (new, switch, branch) and the state and
// statistics answers.

// sessionChange is new_session, switch_session and branch: the
// run is aborted and the queues cleared first.
func (s *server) sessionChange(id *string, c *Command) any {
	cur := s.ag.Session
	var sf *session.File
	var err error
	text := ""
	switch c.Type {
	case "new_session":
		dir := ""
		if cur.Path() != "" {
			dir = filepath.Dir(cur.Path())
		}
		sf, err = session.Create(dir, s.h.Cwd, session.Options{ParentSession: c.ParentSession})
	case "switch_session":
		sf, err = session.Open(c.SessionPath)
	case "branch":
		e, ok := cur.Entry(c.EntryID)
		text, ok = userEntryText(e, ok)
		if !ok || !onPath(cur, c.EntryID) {
			return Error(id, c.Type, "Invalid entry for branching: "+c.EntryID)
		}
		<-s.ag.Abort()
		s.ag.ClearQueues()
		if cur.Path() != "" {
			// A new file holding the path before the message.
			sf, err = cur.BranchInto(filepath.Dir(cur.Path()), e.ParentID)
			break
		}
		// An in-memory session (--no-session) branches in place.
		if e.ParentID == "" {
			cur.ResetLeaf()
		} else if err := cur.Branch(e.ParentID); err != nil {
			return Error(id, c.Type, err.Error())
		}
		s.ag.ReloadContext()
		return OK(id, c.Type, map[string]any{"text": text, "cancelled": false})
	}
	if err != nil {
		return Error(id, c.Type, err.Error())
	}
	if sf.Path() != "" {
		sf.SetBlobsDir(filepath.Join(s.h.AgentDir, "blobs"))
	}
	_ = cur.Persist()
	s.ag.SetSession(sf)
	if s.h.SessionChanged != nil {
		s.h.SessionChanged(sf)
	}
	if c.Type == "switch_session" {
		s.adoptSessionModel(sf)
	}
	if c.Type == "branch" {
		return OK(id, c.Type, map[string]any{"text": text, "cancelled": false})
	}
	return OK(id, c.Type, map[string]any{"cancelled": false})
}

// adoptSessionModel switches to the model and thinking level a resumed
// session last used, when that model is known and has credentials;
// otherwise the current model stays.
func (s *server) adoptSessionModel(sf *session.File) {
	replay := sf.BuildContext()
	if replay.Model != "" && replay.Model != s.ag.CurrentModel().Key() {
		p, id := session.SplitModelKey(replay.Model)
		if found, ok := s.h.Catalog.Lookup(p, id); ok {
			_ = s.h.RestoreModel(context.Background(), found)
		}
	}
	if replay.ThinkingLevel != "" {
		s.ag.RestoreThinkingLevel(agent.ClampThinkingLevel(s.ag.CurrentModel(), replay.ThinkingLevel))
	}
}

// state is the get_state payload.
func (s *server) state() map[string]any {
	steer, follow, interrupt := s.ag.Modes()
	ns, nf := s.ag.QueuedCounts()
	m := ModelOf(s.ag.CurrentModel())
	var todos any = agent.RestoreTodos(s.ag.Session)
	if len(todos.([]tools.TodoPhase)) == 0 {
		todos = []any{}
	}
	st := map[string]any{
		"model":                 m,
		"thinkingLevel":         s.ag.CurrentThinkingLevel(),
		"isStreaming":           s.ag.IsStreaming(),
		"isCompacting":          s.ag.IsCompacting(),
		"steeringMode":          steer,
		"followUpMode":          follow,
		"interruptMode":         interrupt,
		"sessionId":             s.ag.SessionID(),
		"autoCompactionEnabled": s.ag.AutoCompaction(),
		"messageCount":          s.ag.MessageCount(),
		"queuedMessageCount":    ns + nf,
		"todoPhases":            todos,
		"fastModeEnabled":       false,
		"fastModeActive":        false,
		"tokensPerSecond":       nil,
	}
	if f := s.ag.SessionFile(); f != "" {
		st["sessionFile"] = f
	}
	if t := s.ag.Session.Header().Title; t != "" {
		st["sessionName"] = t
	}
	return st
}

// stats is get_session_stats over the in-memory context.
func (s *server) stats() map[string]any {
	var user, asst, calls, results int
	var u llm.Usage
	cost := 0.0
	msgs := s.ag.Messages()
	for _, m := range msgs {
		switch m.Role {
		case "user":
			user++
		case "assistant":
			asst++
			if m.LLM != nil {
				for _, c := range m.LLM.Content {
					if c.Type == llm.ContentToolCall {
						calls++
					}
				}
				u.Input += m.LLM.Usage.Input
				u.Output += m.LLM.Usage.Output
				u.CacheRead += m.LLM.Usage.CacheRead
				u.CacheWrite += m.LLM.Usage.CacheWrite
				cost += m.LLM.Usage.Cost.Total
			}
		case "toolResult":
			results++
		}
	}
	st := map[string]any{"sessionId": s.ag.SessionID(), "userMessages": user, "assistantMessages": asst,
		"toolCalls": calls, "toolResults": results, "totalMessages": len(msgs),
		"tokens": map[string]int64{"input": u.Input, "output": u.Output, "cacheRead": u.CacheRead,
			"cacheWrite": u.CacheWrite, "total": u.Input + u.Output + u.CacheRead + u.CacheWrite},
		"cost": cost}
	if f := s.ag.SessionFile(); f != "" {
		st["sessionFile"] = f
	}
	return st
}

// branchMessages lists the user messages on the active path (branch
// points) with their text.
func (s *server) branchMessages() []map[string]string {
	out := []map[string]string{}
	for _, e := range s.ag.Session.ActivePath() {
		if text, ok := userEntryText(e, true); ok {
			out = append(out, map[string]string{"entryId": e.ID, "text": text})
		}
	}
	return out
}

func userEntryText(e *session.Entry, ok bool) (string, bool) {
	if !ok || e == nil || e.Type != session.TypeMessage {
		return "", false
	}
	var v struct {
		Message json.RawMessage `json:"message"`
	}
	if e.Decode(&v) != nil {
		return "", false
	}
	m, err := session.DecodeMessage(v.Message)
	if err != nil || m.Role != "user" || m.LLM == nil {
		return "", false
	}
	return m.LLM.TextContent(), true
}

func onPath(sf *session.File, id string) bool {
	for _, e := range sf.ActivePath() {
		if e.ID == id {
			return true
		}
	}
	return false
}
