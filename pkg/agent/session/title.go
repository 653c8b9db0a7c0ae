package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// titleSlotBytes is the fixed size of an 18.1.21 title slot line,
// newline included.
const titleSlotBytes = 256

// ErrEmptyName is the rename error.
var ErrEmptyName = errors.New("Session name cannot be empty")

// SetTitle names the session (RPC set_session_name, /rename): the
// header gets `title` and `titleSource:"user"` (its other fields kept in
// order) and the file is rewritten through a temp file. A file that
// starts with an 18.1.21 title slot has the slot rewritten at its fixed
// size and a title_change entry appended.
func (f *File) SetTitle(title string) error {
	if title == "" {
		return ErrEmptyName
	}
	f.mu.Lock()
	slot := false
	// Line 0 is the title slot when there is one, else the header.
	if len(f.lines) > 0 && f.lines[0].entry == nil {
		if isTitle(f.lines[0].raw) {
			slot = true // the header stays as it is
			f.lines[0].raw = titleSlot(title, FormatTime(f.now()))
		} else {
			f.lines[0].raw = headerWithTitle(f.lines[0].raw, title)
		}
		f.header.Title = title
	}
	var err error
	if f.path != "" && f.onDisk {
		err = f.rewrite()
	}
	f.mu.Unlock()
	if err != nil || !slot {
		return err
	}
	fields, _ := json.Marshal(map[string]string{"title": title, "source": "user"})
	_, err = f.appendRaw(TypeTitleChange, fields, false)
	return err
}

// headerWithTitle rewrites a header line with title and titleSource
// "user", keeping every other field in its place.
func headerWithTitle(raw []byte, title string) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	ScanObject(raw, func(key string, val []byte) {
		if key == "title" || key == "titleSource" {
			return
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.Write(appendString(nil, key))
		b.WriteByte(':')
		b.Write(val)
	})
	b.WriteString(`,"title":`)
	b.Write(appendString(nil, title))
	b.WriteString(`,"titleSource":"user"}`)
	return b.Bytes()
}

// titleSlot is the 256-byte slot line (without its newline) for title,
// cut at a code-point boundary when too long.
func titleSlot(title, at string) []byte {
	build := func(t string) []byte {
		b := []byte(`{"type":"title","v":1,"title":`)
		b = appendString(b, t)
		b = append(b, `,"source":"user","updatedAt":`...)
		b = appendString(b, at)
		return append(b, `,"pad":"`...)
	}
	b := build(title)
	for len(b)+2 > titleSlotBytes-1 && title != "" {
		_, size := utf8.DecodeLastRuneInString(title)
		title = title[:len(title)-size]
		b = build(title)
	}
	for len(b)+2 < titleSlotBytes-1 {
		b = append(b, ' ')
	}
	return append(b, `"}`...)
}
