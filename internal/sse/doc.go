// Package sse is the one Server-Sent Events reader and writer of the
// module; every caller uses it rather than framing events itself. The
// provider adapters under pkg/llm read upstream streams with it, the
// broker serves GET /v1/snapshot/stream with it (pkg/vault/server
// Server) and the broker client reads that stream with it
// (pkg/vault/client Client.Stream).
//
// # Reader
//
// Reader follows the WHATWG parsing rules with the tolerances every
// upstream needs: \n, \r\n and lone \r line endings (also split
// across reads), comments, multi-line data joined with \n, one optional
// space after the colon, a leading UTF-8 BOM, sticky id: (ignored when it
// holds NUL) and retry: (digits only), events without data dropped, and a
// final event that lacks its blank line returned with Unterminated set
// (provider adapters accept it when its data is complete JSON; the broker
// client drops it, as the format says). One limit (SetMaxSize, default
// DefaultMaxSize = 32 MiB) bounds both a line and an event's joined data;
// going over it is ErrTooLong, never unbounded growth. The reader owns one
// growable read buffer and one data buffer: an event costs no allocation
// once they have grown (BenchmarkReader), and Event.Data is only valid
// until the next Next.
//
// # Writer
//
// AppendEvent and AppendComment build frames into a caller's buffer;
// Writer writes and flushes one frame at a time. NewHTTPWriter adds a
// per-write deadline through http.ResponseController (DefaultWriteTimeout
// 10 s) so that a stalled subscriber is cut off without a server-wide
// WriteTimeout that would end healthy long streams; SetHeaders sets the
// event-stream response headers.
//
// # Why not github.com/r3labs/sse/v2
//
// r3labs/sse/v2 was the SSE library first chosen, for the remote store's
// subscription in particular (its reconnect loop and Last-Event-ID
// replay). It does not fit there either:
// pkg/vault/remote/r3labs_test.go shows its client failing on a real-size
// broker snapshot, not reconnecting after a clean end of stream and
// retrying for 15 minutes after its context is cancelled; the remote store
// reads the stream through brokerclient.Client.Stream (this Reader) with its
// own reconnect loop (docs/architecture.md). For provider streams and the
// broker stream (read from its v2.10.0 source, event.go and client.go):
//
//   - its client frames whole events with a bufio.Scanner whose buffer is
//     capped (Client default 64 KiB, ClientMaxBufferSize): a broker snapshot
//     frame or a large tool-call delta over the cap fails the stream, and the
//     split function re-runs five bytes.Index scans over the whole buffered
//     input each time more bytes arrive, quadratic on a large event that
//     arrives in small reads; this Reader resumes its line scan where the
//     previous read ended and allows 32 MiB (TestReaderLargeEventSmallReads
//     reads a 1 MiB event delivered 512 bytes at a time);
//   - it allocates per event (the Event, a [][]byte from bytes.FieldsFunc,
//     copies of every field) and hands each event to the caller through a
//     goroutine and an unbuffered channel; this Reader returns events in
//     the caller's goroutine without allocating per event once its
//     buffers have grown (BenchmarkReader);
//   - it does not tell a final unterminated event from a complete one,
//     which the provider adapters need: a final event whose data is
//     complete JSON is still processed;
//   - its Server is a publish/subscribe hub with per-stream event logs and
//     a goroutine per subscriber writing through http.Flusher without write
//     deadlines; the broker stream instead writes pre-encoded frames from
//     the handler goroutine with a per-write deadline.
package sse
