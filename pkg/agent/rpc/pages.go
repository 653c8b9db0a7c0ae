package rpc

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
)

// get_messages_page limits: messages per page (default and most), the
// bytes of one page's message list, and the length of a cursor.
const (
	pageDefaultLimit = 100
	pageMaxLimit     = 256
	pageMaxBytes     = 768 << 10
	pageCursorMax    = 2048
)

// The get_messages_page errors a client answers by falling back to
// get_messages.
const (
	errPageBusy  = "Cannot page messages while the session is changing"
	errPageStale = "RPC message cursor is stale"
)

// isCursorText reports whether s is non-empty unpadded base64url text.
func isCursorText(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// pageCursor is the decoded get_messages_page cursor: the offset of the
// next message in the snapshot (session, leaf, message count) it pages.
type pageCursor struct {
	Version      int     `json:"version"`
	SessionID    string  `json:"sessionId"`
	LeafID       *string `json:"leafId"`
	MessageCount int     `json:"messageCount"`
	Offset       int     `json:"offset"`
}

// messagesPage answers get_messages_page: up to limit messages from the
// cursor's offset, no more than pageMaxBytes of them unless one message
// alone is bigger, and a cursor for the rest while there is any. A
// cursor from another session, leaf or message count is stale.
func (s *server) messagesPage(id *string, c *Command) any {
	const cmd = "get_messages_page"
	if s.ag.IsStreaming() || s.ag.IsCompacting() {
		return ErrorCode(id, cmd, errPageBusy, "session_busy")
	}
	msgs := s.ag.Messages()
	snap := pageCursor{Version: 1, SessionID: s.ag.SessionID(), MessageCount: len(msgs)}
	if leaf := s.ag.Session.Leaf(); leaf != "" {
		snap.LeafID = &leaf
	}
	limit := pageDefaultLimit
	if c.Limit != nil {
		l := *c.Limit
		if l != float64(int(l)) || l < 1 || l > pageMaxLimit {
			return Error(id, cmd, "RPC message page limit must be between 1 and "+strconv.Itoa(pageMaxLimit))
		}
		limit = int(l)
	}
	offset := 0
	if c.Cursor != nil {
		cur, ok := decodeCursor(*c.Cursor)
		if !ok {
			return Error(id, cmd, "Invalid RPC message cursor")
		}
		if cur.SessionID != snap.SessionID || !sameLeaf(cur.LeafID, snap.LeafID) || cur.MessageCount != snap.MessageCount {
			return ErrorCode(id, cmd, errPageStale, "stale_cursor")
		}
		offset = cur.Offset
	}
	page := []json.RawMessage{}
	size := 2
	for offset+len(page) < len(msgs) && len(page) < limit {
		raw := msgs[offset+len(page)].Raw
		n := len(raw)
		if len(page) > 0 {
			n++
		}
		if len(page) > 0 && size+n > pageMaxBytes {
			break
		}
		page = append(page, raw)
		size += n
	}
	data := map[string]any{"messages": page, "totalMessages": len(msgs)}
	if next := offset + len(page); next < len(msgs) {
		snap.Offset = next
		b, _ := json.Marshal(snap)
		data["nextCursor"] = base64.RawURLEncoding.EncodeToString(b)
	}
	return OK(id, cmd, data)
}

// decodeCursor decodes a cursor and checks its fields.
func decodeCursor(s string) (pageCursor, bool) {
	var cur pageCursor
	if len(s) == 0 || len(s) > pageCursorMax || !isCursorText(s) {
		return cur, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || json.Unmarshal(b, &cur) != nil {
		return cur, false
	}
	ok := cur.Version == 1 && cur.SessionID != "" && len(cur.SessionID) <= 256 &&
		(cur.LeafID == nil || *cur.LeafID != "" && len(*cur.LeafID) <= 256) &&
		cur.MessageCount >= 0 && cur.Offset >= 0 && cur.Offset <= cur.MessageCount
	return cur, ok
}

func sameLeaf(a, b *string) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
