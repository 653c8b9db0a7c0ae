package pinative

import (
	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/pkg/llm"
)

// DecodeMessages decodes message objects of the pi-native shape (what a
// request's context.messages holds and what a session file stores) on the
// fast path, one result per raw: msgs[i] is raws[i] decoded when ok[i],
// else the zero message. ok[i] is false for anything the fast path
// declines (a malformed object, an unknown role, a key it would have to
// match case-insensitively…); the caller decodes those raws one by one
// through DecodeRequest or its own decoder, which gives them their exact
// behaviour. An accepted message decodes exactly as it would inside a
// request.
//
// Why a batch: a session of thousands of messages is decoded at once. One
// private copy of every raw backs the raw parts, and the result is one
// exact-size slice, so no request body is assembled around the messages.
// The messages share no memory with raws.
func DecodeMessages(raws [][]byte) (msgs []llm.Message, ok []bool) {
	msgs = make([]llm.Message, len(raws))
	ok = make([]bool, len(raws))
	if len(raws) == 0 {
		return msgs, ok
	}
	size := 0
	for _, r := range raws {
		size += len(r)
	}
	buf := make([]byte, 0, size)
	for _, r := range raws {
		buf = append(buf, r...)
	}
	f := fastPool.Get().(*fast)
	defer f.release()
	l := jsonr.NewReader(nil)
	f.r = l
	base := 0
	for i, r := range raws {
		doc := buf[base : base+len(r) : base+len(r)]
		l.Reset(doc)
		f.msgs = f.msgs[:0]
		if f.message() == nil && l.End() == nil && len(f.msgs) == 1 {
			msgs[i], ok[i] = f.msgs[0], true
		}
		clear(f.msgs)
		base += len(r)
	}
	return msgs, ok
}
