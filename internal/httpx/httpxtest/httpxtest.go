// Package httpxtest holds helpers for tests that talk to a real server at
// the level of raw HTTP/1.1 bytes.
package httpxtest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// RawExchange sends request, raw HTTP/1.1 bytes, on a new connection to
// url (http://host:port) and reads the answer within wait; closed reports
// whether the server closed the connection after it.
func RawExchange(t testing.TB, url, request string, wait time.Duration) (resp *http.Response, body string, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() { _, _ = io.WriteString(c, request) }()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	br := bufio.NewReader(c)
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, err = br.ReadByte()
	return resp, string(b), err != nil
}
