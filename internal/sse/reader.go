package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// DefaultMaxSize is the Reader's default limit on one line and on one
// event's joined data: 32 MiB, the Go SDKs' line limit.
const DefaultMaxSize = 32 << 20

// ErrTooLong reports a line, or an event's joined data, over the Reader's
// limit.
var ErrTooLong = errors.New("sse: line or event too long")

// Event is one dispatched event. Data and the strings stay valid until the
// next call to Next (Data is overwritten then); copy Data to keep it.
type Event struct {
	// Name is the value of the event's last event: field, or "" when absent.
	Name string
	// Data is the event's data: lines joined with \n.
	Data []byte
	// ID is the last event id seen so far on the stream (the id is sticky
	// across events, as for Last-Event-ID).
	ID string
	// Retry is the last valid retry: value in milliseconds, or -1.
	Retry int
	// Unterminated is set on a final event that the stream ended before
	// its blank line. The format says to drop it; a caller may use it only
	// if Data is known complete (for example, valid JSON).
	Unterminated bool
}

// Reader parses an event stream. It is used by one goroutine.
type Reader struct {
	r       io.Reader
	max     int
	buf     []byte // read buffer; unread bytes are buf[pos:end]
	pos     int
	end     int
	err     error // sticky read error
	started bool  // BOM check done
	skipLF  bool  // the previous line ended with \r: skip a leading \n

	data     []byte
	hasData  bool
	name     []byte
	lastName string
	id       string
	retry    int
}

// initialBuf is the read buffer a Reader starts with; fill doubles it
// up to the size limit when a line needs more. Small, because a gateway
// holds one Reader per open upstream stream, and a large start is heap
// per stream, counted by the GC's pacing even where its pages are never
// touched. 1 KiB holds a whole delta event of every upstream; the
// rare larger event (a Responses response.created) grows it once. Reads
// come from the HTTP client's own buffer, so a small one costs no extra
// system calls.
const initialBuf = 1 << 10

// initialName is the capacity of the event-name buffer, which a Reader
// carves from its read buffer's allocation: every upstream event name
// fits.
const initialName = 48

// NewReader returns a Reader of r with the DefaultMaxSize limit.
func NewReader(r io.Reader) *Reader {
	b := make([]byte, initialBuf+initialName)
	return &Reader{r: r, max: DefaultMaxSize, buf: b[:initialBuf:initialBuf], name: b[initialBuf:initialBuf], retry: -1}
}

// knownNames are the event names of the upstream APIs' streams (Anthropic
// Messages, OpenAI Responses), handed out without a string allocation per
// event: Anthropic names every event, and its names alternate.
var knownNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{
		"message_start", "content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop", "ping", "error",
		"response.created", "response.in_progress", "response.completed", "response.failed", "response.incomplete",
		"response.output_item.added", "response.output_item.done",
		"response.content_part.added", "response.content_part.done",
		"response.output_text.delta", "response.output_text.done",
		"response.refusal.delta", "response.refusal.done",
		"response.function_call_arguments.delta", "response.function_call_arguments.done",
		"response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
		"response.reasoning_text.delta", "response.reasoning_text.done",
	} {
		m[n] = n
	}
	return m
}()

// SetMaxSize sets the limit on one line and on one event's joined data;
// n ≤ 0 restores DefaultMaxSize.
func (r *Reader) SetMaxSize(n int) {
	if n <= 0 {
		n = DefaultMaxSize
	}
	r.max = n
}

// Next returns the next event. It returns io.EOF after the last event, the
// underlying read error, or an error matching ErrTooLong. Comments and
// events without data are skipped.
func (r *Reader) Next() (Event, error) {
	r.data = r.data[:0]
	r.hasData = false
	r.name = r.name[:0]
	for {
		line, err := r.line()
		if err != nil {
			if err == io.EOF && r.hasData {
				return r.event(true), nil
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if r.hasData {
				return r.event(false), nil
			}
			r.name = r.name[:0] // an event with no data is dropped
			continue
		}
		if err := r.field(line); err != nil {
			return Event{}, err
		}
	}
}

func (r *Reader) event(unterminated bool) Event {
	var name string
	if len(r.name) > 0 {
		if string(r.name) != r.lastName { // the comparison does not allocate
			if known, ok := knownNames[string(r.name)]; ok { // nor does the lookup
				r.lastName = known
			} else {
				r.lastName = string(r.name)
			}
		}
		name = r.lastName
	}
	ev := Event{Name: name, Data: r.data, ID: r.id, Retry: r.retry, Unterminated: unterminated}
	r.hasData = false
	return ev
}

// field applies one non-empty line.
func (r *Reader) field(line []byte) error {
	if line[0] == ':' {
		return nil // comment
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		if r.hasData {
			if len(r.data)+1+len(value) > r.max {
				return r.tooLong()
			}
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.hasData = true
	case "event":
		r.name = append(r.name[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) < 0 && string(value) != r.id {
			r.id = string(value)
		}
	case "retry":
		if isDigits(value) {
			if n, err := strconv.Atoi(string(value)); err == nil {
				r.retry = n
			}
		}
	}
	return nil
}

func (r *Reader) tooLong() error { return fmt.Errorf("%w (over %d bytes)", ErrTooLong, r.max) }

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// indexEOL returns the index of the first \r or \n in b, or -1. Two
// vectorised IndexByte scans beat bytes.IndexAny's byte loop, on short
// delta frames and on long lines alike (BenchmarkReader,
// BenchmarkReaderLongLines).
func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	return i
}

// line returns the next line without its terminator. The slice is valid
// until the next call.
func (r *Reader) line() ([]byte, error) {
	scanFrom := r.pos
	for {
		if r.skipLF && r.pos < r.end {
			if r.buf[r.pos] == '\n' {
				r.pos++
			}
			r.skipLF = false
			scanFrom = r.pos
		}
		if !r.started && r.end-r.pos >= 3 {
			r.started = true
			if bytes.HasPrefix(r.buf[r.pos:r.end], []byte("\xef\xbb\xbf")) {
				r.pos += 3
				scanFrom = r.pos
			}
		}
		if i := indexEOL(r.buf[scanFrom:r.end]); i >= 0 {
			j := scanFrom + i
			line := r.buf[r.pos:j]
			r.pos = j + 1
			if r.buf[j] == '\r' {
				r.skipLF = true
			}
			if len(line) > r.max {
				return nil, r.tooLong()
			}
			return line, nil
		}
		scanFrom = r.end
		if r.err != nil {
			if r.pos < r.end { // a last line without terminator
				line := r.buf[r.pos:r.end]
				r.pos = r.end
				if len(line) > r.max {
					return nil, r.tooLong()
				}
				return line, nil
			}
			return nil, r.err
		}
		if r.end-r.pos > r.max {
			return nil, r.tooLong()
		}
		scanFrom -= r.fill()
	}
}

// fill reads more input, compacting or growing the buffer first. It
// returns how far the unread bytes moved left.
func (r *Reader) fill() int {
	shift := 0
	if r.pos > 0 && r.end == len(r.buf) {
		shift = r.pos
		copy(r.buf, r.buf[r.pos:r.end])
		r.end -= r.pos
		r.pos = 0
	}
	if r.end == len(r.buf) {
		n := 2 * len(r.buf)
		if n > r.max+1 {
			n = r.max + 1
		}
		if n <= len(r.buf) {
			n = len(r.buf) + 1
		}
		nb := make([]byte, n)
		copy(nb, r.buf[:r.end])
		r.buf = nb
	}
	for tries := 0; tries < 100; tries++ {
		n, err := r.r.Read(r.buf[r.end:])
		r.end += n
		if err != nil {
			r.err = err
			return shift
		}
		if n > 0 {
			if !r.started && r.end-r.pos < 3 {
				continue // need 3 bytes to check the BOM
			}
			return shift
		}
	}
	r.err = io.ErrNoProgress
	return shift
}
