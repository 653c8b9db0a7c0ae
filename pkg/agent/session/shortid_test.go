package session

import (
	"strings"
	"testing"
)

func TestUniquePrefix(t *testing.T) {
	const a = "0198c0de-1a2b-7c3d-8e4f-0123456789ab"
	for _, tc := range []struct {
		id     string
		others []string
		want   string
	}{
		{a, nil, "0198c0de"},
		{a, []string{"0198c0df-0000-7000-8000-000000000000"}, "0198c0de"},
		// A shared first 8 characters: the prefix skips the hyphen.
		{a, []string{"0198C0DE-1a2c-7000-8000-000000000000"}, "0198c0de-1a2b"},
		{a, []string{"0198c0de-1b00-7000-8000-000000000000"}, "0198c0de-1a"},
		{a, []string{a}, a},
		{"short", []string{"shorter"}, "short"},
	} {
		if got := UniquePrefix(tc.id, tc.others); got != tc.want {
			t.Errorf("UniquePrefix(%q, %q) = %q, want %q", tc.id, tc.others, got, tc.want)
		}
	}
}

// TestShortIDOfSessionsStartedTogether: sessions created within the same
// second share their first 8 characters (the UUIDv7 time), yet each shows
// an id that no other session of the directory starts with.
func TestShortIDOfSessionsStartedTogether(t *testing.T) {
	dir := t.TempDir()
	var files []*File
	for range 3 {
		f, err := Create(dir, dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Persist(); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	shown := map[string]bool{}
	for i, f := range files {
		s := ShortID(f)
		if len(s) < MinShortID || !strings.HasPrefix(f.Header().ID, s) {
			t.Fatalf("ShortID %q is not a prefix of %q", s, f.Header().ID)
		}
		if shown[s] {
			t.Fatalf("two sessions show the id %q", s)
		}
		shown[s] = true
		for j, o := range files {
			if i != j && strings.HasPrefix(o.Header().ID, s) {
				t.Errorf("%q (shown for %s) also starts %s", s, f.Header().ID, o.Header().ID)
			}
		}
	}
	// An in-memory session and one not yet written show 8 characters.
	mem, _ := Create("", dir, Options{})
	if s := ShortID(mem); s != mem.Header().ID[:MinShortID] {
		t.Errorf("in-memory ShortID = %q", s)
	}
}
