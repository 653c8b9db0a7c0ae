package session

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// migrate brings a version 1 or 2 file to version 3 in memory:
// v1 → v2 gives every entry an id chained to the previous entry and turns
// compaction firstKeptEntryIndex into firstKeptEntryId; v2 → v3 renames
// the message role hookMessage to custom. Lines that do not parse are
// kept where they are.
func (f *File) migrate() error {
	from := f.header.Version
	var ids []string // entry id by entry index (v1 indices count entries)
	prev := ""
	for i := range f.lines {
		l := &f.lines[i]
		if l.entry == nil {
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(l.raw, &obj) != nil {
			continue
		}
		changed := false
		if from < 2 {
			if l.entry.ID == "" {
				id := f.newID()
				obj["id"], _ = json.Marshal(id)
				l.entry.ID = id
				f.byID[id] = l.entry
			}
			if _, has := obj["parentId"]; !has {
				if prev == "" {
					obj["parentId"] = json.RawMessage("null")
				} else {
					obj["parentId"], _ = json.Marshal(prev)
				}
				l.entry.ParentID = prev
			}
			if l.entry.Type == TypeCompaction {
				if idx, ok := obj["firstKeptEntryIndex"]; ok {
					var n int
					if json.Unmarshal(idx, &n) == nil && n >= 0 && n < len(ids) {
						obj["firstKeptEntryId"], _ = json.Marshal(ids[n])
					}
					delete(obj, "firstKeptEntryIndex")
				}
			}
			changed = true
			ids = append(ids, l.entry.ID)
			prev = l.entry.ID
		}
		if l.entry.Type == TypeMessage {
			if msg, ok := obj["message"]; ok && bytes.Contains(msg, []byte(`"hookMessage"`)) {
				var m map[string]json.RawMessage
				if json.Unmarshal(msg, &m) == nil && string(m["role"]) == `"hookMessage"` {
					m["role"] = json.RawMessage(`"custom"`)
					obj["message"], _ = json.Marshal(m)
					changed = true
				}
			}
		}
		if changed {
			b, err := json.Marshal(obj)
			if err != nil {
				return fmt.Errorf("session: migrate: %w", err)
			}
			l.raw, l.entry.Raw, l.entry.message = b, b, nil
		}
	}
	if from < 2 && prev != "" {
		f.leaf = prev
	}
	// Header: version 3, other fields untouched.
	for i := range f.lines {
		if f.lines[i].entry != nil || isTitle(f.lines[i].raw) {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(f.lines[i].raw, &obj); err != nil {
			return fmt.Errorf("session: migrate header: %w", err)
		}
		obj["version"] = json.RawMessage("3")
		b, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		f.lines[i].raw = b
		break
	}
	f.header.Version = CurrentVersion
	return nil
}
