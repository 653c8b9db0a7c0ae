package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

type got struct {
	Name, Data, ID string
	Retry          int
	Unterminated   bool
}

func readAll(t testing.TB, r io.Reader, max int) ([]got, error) {
	t.Helper()
	rd := NewReader(r)
	rd.SetMaxSize(max)
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
		{"cr before lf in one chunk", "data: a\rdata: b\n\n", []got{{"", "a\nb", "", -1, false}}},
		{"comments ignored", ": keepalive\n\n:x\ndata: 1\n\n", []got{{"", "1", "", -1, false}}},
		{"multi-line data joined", "data: a\ndata: b\ndata:c\n\n", []got{{"", "a\nb\nc", "", -1, false}}},
		{"only one leading space stripped", "data:  a\n\n", []got{{"", " a", "", -1, false}}},
		{"id and retry kept", "id: 7\nretry: 1500\ndata: x\n\nretry: bad\ndata: y\n\n",
			[]got{{"", "x", "7", 1500, false}, {"", "y", "7", 1500, false}}},
		{"id with NUL ignored, signed retry ignored", "id: 1\ndata: x\n\nid: a\x00b\nretry: +5\ndata: y\n\n",
			[]got{{"", "x", "1", -1, false}, {"", "y", "1", -1, false}}},
		{"event without data dropped and name reset", "event: ping\n\ndata: x\n\n", []got{{"", "x", "", -1, false}}},
		{"empty data line dispatches empty event", "data:\n\n", []got{{"", "", "", -1, false}}},
		{"field without colon", "data\n\n", []got{{"", "", "", -1, false}}},
		{"bom stripped", "\xef\xbb\xbfdata: 1\n\n", []got{{"", "1", "", -1, false}}},
		{"final event without blank line", "data: 1\n\ndata: {\"a\":2}", []got{{"", "1", "", -1, false}, {"", `{"a":2}`, "", -1, true}}},
		{"padded json untouched", "data: {\"type\":\"x\"   }\n\n", []got{{"", `{"type":"x"   }`, "", -1, false}}},
		{"unknown fields ignored", "foo: bar\ndata: 1\n\n", []got{{"", "1", "", -1, false}}},
		// The broker client's former reader test: mixed endings, comments, id/retry.
		{"broker stream", ": hello\r\nevent: a\r\ndata: 1\r\ndata:2\r\n\r\nid: 7\nretry: 5\ndata: x\n\n: keepalive\n\nevent: b\rdata: y\r\revent: c\ndata: no-blank-line",
			[]got{{"a", "1\n2", "", -1, false}, {"", "x", "7", 5, false}, {"b", "y", "7", 5, false}, {"c", "no-blank-line", "7", 5, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "byte-by-byte", "half"} {
				var r io.Reader = strings.NewReader(tt.in)
				switch mode {
				case "byte-by-byte":
					r = iotest.OneByteReader(r)
				case "half":
					r = iotest.HalfReader(r)
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

// A 1 MiB event (over r3labs/sse's 64 KiB default cap) arriving 512 bytes
// at a time is read whole.
func TestReaderLargeEventSmallReads(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	r := &chunkReader{s: "event: snapshot\ndata: " + big + "\n\n", n: 512}
	out, err := readAll(t, r, 0)
	if err != nil || len(out) != 1 || out[0].Data != big || out[0].Name != "snapshot" {
		t.Fatalf("err %v, %d events", err, len(out))
	}
}

type chunkReader struct {
	s string
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[n:]
	return n, nil
}

func TestReaderTooLong(t *testing.T) {
	for name, in := range map[string]string{
		"line":                "data: " + strings.Repeat("A", 100) + "\n\n",
		"unterminated line":   "data: " + strings.Repeat("A", 100),
		"event of many lines": strings.Repeat("data: "+strings.Repeat("A", 20)+"\n", 5) + "\n",
	} {
		if _, err := readAll(t, strings.NewReader(in), 64); !errors.Is(err, ErrTooLong) {
			t.Errorf("%s: err = %v, want ErrTooLong", name, err)
		}
	}
	// At the limit is fine.
	if out, err := readAll(t, strings.NewReader("data: "+strings.Repeat("A", 58)+"\n\n"), 64); err != nil || len(out) != 1 {
		t.Fatalf("at limit: %v %v", out, err)
	}
}

func TestReaderPropagatesReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := readAll(t, io.MultiReader(strings.NewReader("data: 1\n\n"), iotest.ErrReader(boom)), 0)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}

// Event.Data is reused by the next call to Next.
func TestReaderDataValidUntilNext(t *testing.T) {
	r := NewReader(strings.NewReader("data: aaaa\n\ndata: bbbb\n\n"))
	ev, _ := r.Next()
	first := ev.Data
	if string(first) != "aaaa" {
		t.Fatal(string(first))
	}
	_, _ = r.Next()
	if string(first) != "bbbb" {
		t.Fatalf("Data not reused: %q (update the Event doc if this changed)", first)
	}
}

func TestAppendEvent(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"", `{"a":1}`, "data: {\"a\":1}\n\n"},
		{"message_start", `{}`, "event: message_start\ndata: {}\n\n"},
		{"", "l1\nl2", "data: l1\ndata: l2\n\n"},
		{"", "l1\r\nl2\rl3\n", "data: l1\ndata: l2\ndata: l3\ndata: \n\n"},
		{"", "", "data: \n\n"},
		{"bad\r\nname", "x", "event: badname\ndata: x\n\n"},
	}
	for _, tt := range tests {
		if got := string(AppendEvent(nil, tt.name, []byte(tt.data))); got != tt.want {
			t.Errorf("AppendEvent(%q, %q) = %q, want %q", tt.name, tt.data, got, tt.want)
		}
	}
	if got := string(AppendComment(nil, "a\nb")); got != ": a\n: b\n\n" {
		t.Errorf("AppendComment = %q", got)
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
	_ = w.WriteFrames([]byte("data: raw\n\n"))
	want := "event: message_start\ndata: {\"a\":1}\n\n: keepalive\n\ndata: line1\ndata: line2\n\ndata: raw\n\n"
	if b.String() != want || flushes != 4 {
		t.Fatalf("wrote %q (%d flushes)", b.String(), flushes)
	}
	out, _ := readAll(t, &b, 0)
	if len(out) != 3 || out[0].Name != "message_start" || out[1].Data != "line1\nline2" || out[2].Data != "raw" {
		t.Fatalf("read back %+v", out)
	}
}

func TestWriterReleasesLargeBuffer(t *testing.T) {
	w := NewWriter(io.Discard, nil)
	_ = w.Event("", bytes.Repeat([]byte("x"), 2*maxKeptBuf))
	if w.buf != nil {
		t.Fatalf("kept a %d-byte buffer", cap(w.buf))
	}
	_ = w.Event("", []byte("small"))
	if w.buf == nil {
		t.Fatal("small frame buffer not kept")
	}
}

// The HTTP writer flushes every frame: the client reads each one while the
// handler is still running.
func TestHTTPWriterFlushesEachFrame(t *testing.T) {
	next := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetHeaders(w.Header())
		s := NewHTTPWriter(w, time.Second)
		_ = s.Event("snapshot", []byte(`{"a":1}`))
		<-next
		_ = s.Comment("keepalive")
		_ = s.Event("", []byte("l1\nl2"))
	}))
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" || resp.Header.Get("X-Accel-Buffering") != "no" ||
		resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("headers %v", resp.Header)
	}
	br := bufio.NewReader(resp.Body)
	first := make([]byte, len("event: snapshot\ndata: {\"a\":1}\n\n"))
	if _, err := io.ReadFull(br, first); err != nil || string(first) != "event: snapshot\ndata: {\"a\":1}\n\n" {
		t.Fatalf("first frame %q %v", first, err)
	}
	close(next)
	rest, _ := io.ReadAll(br)
	if string(rest) != ": keepalive\n\ndata: l1\ndata: l2\n\n" {
		t.Fatalf("rest %q", rest)
	}
}

// A client that stops reading is cut off by the per-write deadline.
func TestHTTPWriterDeadline(t *testing.T) {
	if NewHTTPWriter(httptest.NewRecorder(), 0).timeout != DefaultWriteTimeout {
		t.Fatal("default write timeout")
	}
	done := make(chan error, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetHeaders(w.Header())
		s := NewHTTPWriter(w, 100*time.Millisecond)
		frame := bytes.Repeat([]byte("x"), 1<<20)
		for {
			if err := s.Event("", frame); err != nil {
				done <- err
				return
			}
		}
	}))
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() // never read
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("nil error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stalled client was not cut off")
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{"event: a\ndata: 1\n\n", "data: x\r\n\r\n", ":c\rdata:\r\r", "\xef\xbb\xbfid: 1\nretry: 5\ndata: y",
		"event: a\ndata: {}\n\n", ": k\r\n\r\n", "data: 1\rdata: 2\r\r", "data\n\n", "event\n", "\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// Whole and byte-by-byte reads must agree, and never panic.
		a, errA := readAll(t, bytes.NewReader(in), 1<<16)
		b, errB := readAll(t, iotest.OneByteReader(bytes.NewReader(in)), 1<<16)
		if (errA == nil) != (errB == nil) || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("whole %+v (%v) != byte-by-byte %+v (%v)", a, errA, b, errB)
		}
		// Every event written back and re-read is unchanged (names lose
		// line breaks, data keeps its \n separators).
		var buf []byte
		for _, e := range a {
			if strings.ContainsAny(e.Name, "\r\n") {
				t.Fatalf("event name with a line break: %q", e.Name)
			}
			buf = AppendEvent(buf, e.Name, []byte(e.Data))
		}
		c, err := readAll(t, bytes.NewReader(buf), 1<<17)
		if err != nil || len(c) != len(a) {
			t.Fatalf("re-read %d events (%v), want %d", len(c), err, len(a))
		}
		for i := range c {
			if c[i].Name != a[i].Name || c[i].Data != a[i].Data {
				t.Fatalf("event %d: %+v != %+v", i, c[i], a[i])
			}
		}
	})
}

func benchStream(b *testing.B, stream []byte) {
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

// BenchmarkReader reads 1000 Anthropic text-delta frames.
func BenchmarkReader(b *testing.B) {
	frame := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello there, world\"}}\n\n"
	benchStream(b, []byte(strings.Repeat(frame, 1000)))
}

// BenchmarkReaderLongLines reads 100 frames of 16 KiB data lines (large
// tool arguments, broker snapshots): the line scan dominates.
func BenchmarkReaderLongLines(b *testing.B) {
	frame := "event: snapshot\ndata: {\"x\":\"" + strings.Repeat("abcdefgh", 2<<10) + "\"}\n\n"
	benchStream(b, []byte(strings.Repeat(frame, 100)))
}

// BenchmarkAppendEvent encodes one compact JSON frame.
func BenchmarkAppendEvent(b *testing.B) {
	data := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello there, world"}}`)
	b.ReportAllocs()
	buf := make([]byte, 0, 512)
	for b.Loop() {
		buf = AppendEvent(buf[:0], "content_block_delta", data)
	}
}
