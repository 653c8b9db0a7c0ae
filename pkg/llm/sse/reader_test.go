package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type got struct {
	Name, Data, ID string
	Retry          int
	Unterminated   bool
}

func readAll(t *testing.T, r io.Reader, max int) ([]got, error) {
	t.Helper()
	rd := NewReader(r)
	rd.SetMaxLineSize(max)
	var out []got
	for {
		ev, err := rd.Next()
		if err != nil {
			if err == io.EOF {
				return out, nil
			}
			return out, err
		}
		out = append(out, got{ev.Name, string(ev.Data), ev.ID, ev.Retry, ev.Unterminated})
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []got
	}{
		{"lf frames with event names", "event: a\ndata: {\"x\":1}\n\nevent: b\ndata: 2\n\n",
			[]got{{"a", `{"x":1}`, "", -1, false}, {"b", "2", "", -1, false}}},
		{"crlf separators", "data: 1\r\n\r\ndata: 2\r\n\r\n", []got{{"", "1", "", -1, false}, {"", "2", "", -1, false}}},
		{"lone cr line endings", "data: 1\r\rdata: 2\r\r", []got{{"", "1", "", -1, false}, {"", "2", "", -1, false}}},
		{"comments ignored", ": keepalive\n\n:x\ndata: 1\n\n", []got{{"", "1", "", -1, false}}},
		{"multi-line data joined", "data: a\ndata: b\ndata:c\n\n", []got{{"", "a\nb\nc", "", -1, false}}},
		{"only one leading space stripped", "data:  a\n\n", []got{{"", " a", "", -1, false}}},
		{"id and retry kept", "id: 7\nretry: 1500\ndata: x\n\nretry: bad\ndata: y\n\n",
			[]got{{"", "x", "7", 1500, false}, {"", "y", "7", 1500, false}}},
		{"event without data dropped and name reset", "event: ping\n\ndata: x\n\n", []got{{"", "x", "", -1, false}}},
		{"empty data line dispatches empty event", "data:\n\n", []got{{"", "", "", -1, false}}},
		{"field without colon", "data\n\n", []got{{"", "", "", -1, false}}},
		{"bom stripped", "\xef\xbb\xbfdata: 1\n\n", []got{{"", "1", "", -1, false}}},
		{"final event without blank line", "data: 1\n\ndata: {\"a\":2}", []got{{"", "1", "", -1, false}, {"", `{"a":2}`, "", -1, true}}},
		{"padded json untouched", "data: {\"type\":\"x\"   }\n\n", []got{{"", `{"type":"x"   }`, "", -1, false}}},
		{"unknown fields ignored", "foo: bar\ndata: 1\n\n", []got{{"", "1", "", -1, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "byte-by-byte"} {
				var r io.Reader = strings.NewReader(tt.in)
				if mode != "whole" {
					r = iotest.OneByteReader(r)
				}
				out, err := readAll(t, r, 0)
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				if fmt.Sprint(out) != fmt.Sprint(tt.want) {
					t.Fatalf("%s: got %+v\nwant %+v", mode, out, tt.want)
				}
			}
		})
	}
}

func TestReaderLargeLine(t *testing.T) {
	big := strings.Repeat("A", 5<<20)
	out, err := readAll(t, strings.NewReader("data: "+big+"\n\n"), 0)
	if err != nil || len(out) != 1 || out[0].Data != big {
		t.Fatalf("5 MiB line: err %v, %d events", err, len(out))
	}
}

func TestReaderLineTooLong(t *testing.T) {
	_, err := readAll(t, strings.NewReader("data: "+strings.Repeat("A", 100)+"\n\n"), 64)
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
}

func TestReaderPropagatesReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := readAll(t, io.MultiReader(strings.NewReader("data: 1\n\n"), iotest.ErrReader(boom)), 0)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}

func TestWriterRoundTrip(t *testing.T) {
	var b bytes.Buffer
	flushes := 0
	w := NewWriter(&b, func() error { flushes++; return nil })
	if err := w.Event("message_start", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	_ = w.Comment("keepalive")
	_ = w.Event("", []byte("line1\nline2"))
	want := "event: message_start\ndata: {\"a\":1}\n\n: keepalive\n\ndata: line1\ndata: line2\n\n"
	if b.String() != want || flushes != 3 {
		t.Fatalf("wrote %q (%d flushes)", b.String(), flushes)
	}
	out, _ := readAll(t, &b, 0)
	if len(out) != 2 || out[0].Name != "message_start" || out[1].Data != "line1\nline2" {
		t.Fatalf("read back %+v", out)
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{"event: a\ndata: 1\n\n", "data: x\r\n\r\n", ":c\rdata:\r\r", "\xef\xbb\xbfid: 1\nretry: 5\ndata: y"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// Whole and byte-by-byte reads must agree, and never panic.
		a, errA := readAll(t, bytes.NewReader(in), 1<<16)
		b, errB := readAll(t, iotest.OneByteReader(bytes.NewReader(in)), 1<<16)
		if (errA == nil) != (errB == nil) || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("whole %+v (%v) != byte-by-byte %+v (%v)", a, errA, b, errB)
		}
		// Every event written back and re-read is unchanged.
		var buf []byte
		for _, e := range a {
			buf = AppendEvent(buf, strings.NewReplacer("\n", "", "\r", "").Replace(e.Name), []byte(e.Data))
		}
		c, err := readAll(t, bytes.NewReader(buf), 1<<17)
		if err != nil || len(c) != len(a) {
			t.Fatalf("re-read %d events (%v), want %d", len(c), err, len(a))
		}
	})
}

func BenchmarkReader(b *testing.B) {
	frame := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello there, world\"}}\n\n"
	stream := []byte(strings.Repeat(frame, 1000))
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	rd := bytes.NewReader(stream)
	for b.Loop() {
		rd.Reset(stream)
		r := NewReader(rd)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}
