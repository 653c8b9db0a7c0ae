package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// BranchInto starts a new session file in dir from the path of f up to and
// including leaf ("" = no entries), as /branch and RPC branch do:
// a header with a new id and timestamp, f's cwd and title, and
// parentSession = f's file (18.1.21 writes the source path); the path's
// entries with label entries dropped and parentIds re-chained, every other
// byte of each line kept. The file is written at once.
func (f *File) BranchInto(dir, leaf string) (*File, error) {
	if dir == "" {
		return nil, fmt.Errorf("session: branch: %w", errNoDir)
	}
	var path []*Entry
	if leaf != "" {
		if path = f.PathTo(leaf); len(path) == 0 {
			return nil, fmt.Errorf("session: branch: entry %s not found", leaf)
		}
	}
	f.mu.Lock()
	src, title, cwd := f.path, f.header.Title, f.header.Cwd
	f.mu.Unlock()
	nf, err := Create(dir, cwd, Options{ParentSession: src})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	head := nf.lines[0].raw
	if title != "" {
		head = headerWithTitle(head, title)
	}
	buf.Write(head)
	buf.WriteByte('\n')
	prev := ""
	for _, e := range path {
		if e.Type == TypeLabel {
			continue
		}
		raw := []byte(e.Raw)
		if e.ParentID != prev {
			raw = withMember(raw, "parentId", parentJSON(prev))
		}
		buf.Write(raw)
		buf.WriteByte('\n')
		prev = e.ID
	}
	out, err := parse(buf.Bytes())
	if err != nil {
		return nil, err
	}
	out.path, out.now = nf.path, time.Now
	if err := out.writeAll(); err != nil {
		return nil, err
	}
	return out, nil
}

var errNoDir = errors.New("in-memory session cannot branch into a file")

func parentJSON(id string) []byte {
	if id == "" {
		return []byte("null")
	}
	b, _ := json.Marshal(id)
	return b
}

// withMember returns the JSON object line raw with member key set to val,
// in its place (appended when absent); every other member is kept as it
// was.
func withMember(raw []byte, key string, val []byte) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	n, found := 0, false
	ScanObject(raw, func(k string, v []byte) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.Write(appendString(nil, k))
		b.WriteByte(':')
		if k == key {
			v, found = val, true
		}
		b.Write(v)
	})
	if !found {
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(appendString(nil, key))
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// appendString appends s quoted as encoding/json writes it. The line
// rewrites use it to keep every other member's bytes and order, which a
// struct cannot.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}
