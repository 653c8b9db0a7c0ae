package llm

import (
	"testing"
	"unsafe"
)

// TestContentStaysSmall guards the layout the request decoders rely on:
// rarely set fields belong in ContentExtra.
func TestContentStaysSmall(t *testing.T) {
	if n := unsafe.Sizeof(Content{}); n > 176 {
		t.Fatalf("llm.Content is %d bytes; move rare fields to ContentExtra", n)
	}
}

func TestSettersCopyExtraOnWrite(t *testing.T) {
	a := Content{Type: ContentText, Text: "x"}
	a.SetURL("") // a zero value on a block without extras allocates nothing
	if a.Extra != nil {
		t.Fatal("zero set allocated Extra")
	}
	a.SetTextSignature("s1")
	b := a // copies share Extra until one is written
	b.SetTextSignature("s2")
	b.SetCache(&CacheControl{TTL: "1h"})
	if a.TextSignature() != "s1" || a.Cache() != nil || b.TextSignature() != "s2" || b.Cache().TTL != "1h" {
		t.Fatalf("a=%+v b=%+v", a.Extra, b.Extra)
	}
	n := Native(APIAnthropic, []byte(`{"type":"x"}`))
	if n.NativeAPI() != APIAnthropic || string(n.Raw()) != `{"type":"x"}` || n.URL() != "" {
		t.Fatalf("native = %+v", n.Extra)
	}
}
