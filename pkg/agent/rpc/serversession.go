package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"time"

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
	s.adopt(sf)
	if c.Type == "switch_session" {
		s.adoptSessionModel(sf)
	}
	if c.Type == "branch" {
		return OK(id, c.Type, map[string]any{"text": text, "cancelled": false})
	}
	return OK(id, c.Type, map[string]any{"cancelled": false})
}

// adopt makes sf the agent's session: the current one is flushed and its
// run aborted.
func (s *server) adopt(sf *session.File) {
	if sf.Path() != "" {
		sf.SetBlobsDir(filepath.Join(s.h.AgentDir, "blobs"))
	}
	_ = s.ag.Session.Persist()
	s.ag.SetSession(sf)
	if s.h.SessionChanged != nil {
		s.h.SessionChanged(sf)
	}
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
		"hasPendingAsyncWork":   s.hasPendingAsyncWork(),
		"isSettled":             s.isSettled(),
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

// openSession is open_session: the most recent session in dir is resumed
// (unless it is the current one); with none there a new session starts
// in dir (unless the current one is an empty session there already).
func (s *server) openSession(id *string, dir string) any {
	cur := s.ag.Session
	if cur.Path() == "" {
		return Error(id, "open_session", "open_session requires session persistence (omit --no-session)")
	}
	if strings.TrimSpace(dir) == "" {
		return Error(id, "open_session", "sessionDir must be a non-empty string")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.h.Cwd, dir)
	}
	dir = filepath.Clean(dir)
	latest := session.MostRecent(dir)
	here := filepath.Dir(cur.Path()) == dir && s.ag.MessageCount() == 0
	if latest != "" {
		here = filepath.Clean(latest) == filepath.Clean(cur.Path())
	}
	if !here {
		var sf *session.File
		var err error
		if latest != "" {
			sf, err = session.Open(latest)
		} else {
			sf, err = session.Create(dir, s.h.Cwd, session.Options{})
		}
		if err != nil {
			return Error(id, "open_session", err.Error())
		}
		s.adopt(sf)
		if latest != "" {
			s.adoptSessionModel(sf)
		}
	}
	data := map[string]any{"cancelled": false, "resumed": latest != "", "sessionId": s.ag.SessionID()}
	if f := s.ag.SessionFile(); f != "" {
		data["sessionFile"] = f
	}
	return OK(id, "open_session", data)
}

// entriesSince is get_entries: every entry of the session in file order,
// or with since those after the entry with that id.
func entriesSince(sf *session.File, since *string) (map[string]any, error) {
	entries := sf.Entries()
	if since != nil {
		i := slices.IndexFunc(entries, func(e *session.Entry) bool { return e.ID == *since })
		if i < 0 {
			return nil, errors.New("Unknown entries cursor: " + *since)
		}
		entries = entries[i+1:]
	}
	raw := make([]json.RawMessage, len(entries))
	for i, e := range entries {
		raw[i] = e.Raw
	}
	return map[string]any{"entries": raw, "leafId": leafID(sf)}, nil
}

// leafID is the session's leaf as the protocol reports it: null when the
// next entry is a root.
func leafID(sf *session.File) any {
	if l := sf.Leaf(); l != "" {
		return l
	}
	return nil
}

// treeNode is one entry of get_tree with its children, oldest first, and
// the label a label entry gave it.
type treeNode struct {
	Entry    json.RawMessage `json:"entry"`
	Children []*treeNode     `json:"children"`
	Label    string          `json:"label,omitempty"`

	timestamp, id, parentID string
	cut                     bool // the parent link is not followed
}

// tree is get_tree's forest: roots are the entries without a parent in
// the file, children sorted by timestamp.
func tree(entries []*session.Entry) []*treeNode {
	labels := map[string]string{}
	for _, e := range entries {
		if e.Type != session.TypeLabel {
			continue
		}
		var l struct {
			TargetID string `json:"targetId"`
			Label    string `json:"label"`
		}
		if e.Decode(&l) == nil && l.TargetID != "" {
			if l.Label == "" {
				delete(labels, l.TargetID)
			} else {
				labels[l.TargetID] = l.Label
			}
		}
	}
	list := make([]*treeNode, len(entries))
	byID := make(map[string]*treeNode, len(entries))
	for i, e := range entries {
		list[i] = &treeNode{Entry: e.Raw, Children: []*treeNode{}, Label: labels[e.ID], timestamp: e.Timestamp,
			id: e.ID, parentID: e.ParentID}
		byID[e.ID] = list[i]
	}
	parent := func(n *treeNode) *treeNode {
		if n.parentID == "" || n.parentID == n.id {
			return nil
		}
		return byID[n.parentID]
	}
	// A parent link that closes a cycle (a damaged file) is cut: that
	// entry becomes a root, so the forest stays finite.
	const (
		walking = 1
		done    = 2
	)
	state := make(map[*treeNode]int, len(list))
	for _, n := range list {
		var path []*treeNode
		for cur := n; cur != nil && state[cur] == 0; {
			state[cur] = walking
			path = append(path, cur)
			p := parent(cur)
			if p != nil && state[p] == walking {
				cur.cut = true
				break
			}
			cur = p
		}
		for _, m := range path {
			state[m] = done
		}
	}
	roots := []*treeNode{}
	for _, n := range list {
		if p := parent(n); p != nil && !n.cut {
			p.Children = append(p.Children, n)
		} else {
			roots = append(roots, n)
		}
	}
	for _, n := range list {
		slices.SortStableFunc(n.Children, func(a, b *treeNode) int { return entryTime(a.timestamp).Compare(entryTime(b.timestamp)) })
	}
	return roots
}

// entryTime is an entry timestamp; the zero time when it does not parse.
func entryTime(ts string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, ts)
	return t
}
