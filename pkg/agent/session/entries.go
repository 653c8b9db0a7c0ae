package session

import (
	"bytes"
	"fmt"
)

// EntryMessages returns, for each entry, the agent message it contributes
// to the context, or a zero Message (Role "") for entries
// that contribute none. Compaction entries are not converted here: their
// summary is only emitted for the latest one by BuildContext. Each entry
// is decoded once per File: BuildContext and EntryMessages remember what
// they decoded, so after a context build this costs a lookup per entry.
func (f *File) EntryMessages(entries []*Entry) []Message {
	out := make([]Message, len(entries))
	var miss []int
	f.mu.Lock()
	for i, e := range entries {
		if m, ok := f.cache[e]; ok {
			out[i] = m
		} else {
			miss = append(miss, i)
		}
	}
	f.mu.Unlock()
	if len(miss) == 0 {
		return out
	}
	var b batch
	pos := make([]int, len(miss))
	for k, i := range miss {
		n := len(b.out)
		b.add(entries[i])
		pos[k] = -1
		if len(b.out) > n {
			pos[k] = n
		}
	}
	b.decode()
	f.rehydrate(b.out)
	f.remember(&b)
	f.mu.Lock()
	for k, i := range miss {
		if p := pos[k]; p >= 0 && valid(b.out[p]) {
			out[i] = b.out[p]
		} else if f.cache != nil {
			f.cache[entries[i]] = Message{}
		}
	}
	f.mu.Unlock()
	return out
}

// remember caches the decoded messages of a batch by entry.
func (f *File) remember(b *batch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cache == nil {
		f.cache = make(map[*Entry]Message, len(b.out))
	}
	for i, e := range b.ents {
		if e != nil && valid(b.out[i]) {
			f.cache[e] = b.out[i]
		}
	}
}

// ReplaceMessages replaces the message of the given message entries (id →
// new message JSON), keeping every other byte of their lines, and
// rewrites the file (tool-output pruning). Nothing is changed when
// an id is unknown or not a message entry.
func (f *File) ReplaceMessages(repl map[string][]byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	type change struct {
		line int
		raw  []byte
	}
	var changes []change
	for i, l := range f.lines {
		if l.entry == nil {
			continue
		}
		m, ok := repl[l.entry.ID]
		if !ok {
			continue
		}
		if l.entry.Type != TypeMessage {
			return fmt.Errorf("session: entry %s is not a message", l.entry.ID)
		}
		old := l.entry.field("message")
		off := cap(l.raw) - cap(old)
		if old == nil || off < 0 || off+len(old) > len(l.raw) || !bytes.Equal(l.raw[off:off+len(old)], old) {
			return fmt.Errorf("session: entry %s has no message", l.entry.ID)
		}
		raw := make([]byte, 0, len(l.raw)-len(old)+len(m))
		raw = append(raw, l.raw[:off]...)
		raw = append(raw, m...)
		raw = append(raw, l.raw[off+len(old):]...)
		changes = append(changes, change{i, raw})
	}
	if len(changes) != len(repl) {
		return fmt.Errorf("session: %d of %d entries to replace not found", len(repl)-len(changes), len(repl))
	}
	for _, c := range changes {
		delete(f.cache, f.lines[c.line].entry)
		e := *f.lines[c.line].entry
		e.Raw = c.raw
		f.lines[c.line] = line{raw: c.raw, entry: &e}
		f.byID[e.ID] = &e
	}
	if f.path == "" || !f.onDisk {
		return nil
	}
	return f.rewrite()
}
