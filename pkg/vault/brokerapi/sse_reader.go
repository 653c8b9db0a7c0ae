package brokerapi

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxSSELine bounds one SSE line (a snapshot frame is one data line; 64 MiB
// is far above any realistic vault).
const maxSSELine = 64 << 20

// errSSELineTooLong reports a line over maxSSELine.
var errSSELineTooLong = errors.New("sse line too long")

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	name string // "" when the event had no event: field
	data []byte // data: lines joined with "\n"
}

// sseReader parses the text/event-stream format: lines end in CRLF, LF or
// CR; lines starting with ':' are comments; "event" and "data" fields are
// kept ("id", "retry" and unknown fields ignored); a blank line dispatches
// the event when it has data. A final event not followed by a blank line is
// dropped, as the format requires.
type sseReader struct {
	sc   *bufio.Scanner
	name []byte
	data []byte
	has  bool
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxSSELine)
	sc.Split(scanSSELines)
	return &sseReader{sc: sc}
}

// next returns the next event, io.EOF at a clean end of input.
func (r *sseReader) next() (sseEvent, error) {
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) == 0 {
			if r.has {
				ev := sseEvent{name: string(r.name), data: bytes.Clone(r.data)}
				r.name, r.data, r.has = r.name[:0], r.data[:0], false
				return ev, nil
			}
			r.name = r.name[:0]
			continue
		}
		if line[0] == ':' {
			continue // comment (keepalive)
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			r.name = append(r.name[:0], value...)
		case "data":
			if r.has {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, value...)
			r.has = true
		}
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return sseEvent{}, errSSELineTooLong
		}
		return sseEvent{}, err
	}
	return sseEvent{}, io.EOF
}

// scanSSELines splits on CRLF, LF or a lone CR.
func scanSSELines(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		if i+1 < len(data) {
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
		if atEOF {
			return i + 1, data[:i], nil
		}
		return 0, nil, nil // a CR at the end of the buffer: wait for a possible LF
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}
