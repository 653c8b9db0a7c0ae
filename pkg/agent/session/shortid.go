package session

import (
	"path/filepath"
	"strings"
)

// MinShortID is the fewest characters of a session id shown to the user.
const MinShortID = 8

// UniquePrefix returns the shortest prefix of id, at least MinShortID
// characters and not ending in '-', that none of others starts with
// (case-insensitively). Session ids are UUIDv7s whose leading characters
// are the creation time, so sessions started close together share a long
// prefix; the whole id is returned when no shorter prefix is unique.
func UniquePrefix(id string, others []string) string {
	lid := strings.ToLower(id)
	n := min(MinShortID, len(id))
	for ; n < len(id); n++ {
		if id[n-1] == '-' {
			continue
		}
		p := lid[:n]
		shared := false
		for _, o := range others {
			if strings.HasPrefix(strings.ToLower(o), p) {
				shared = true
				break
			}
		}
		if !shared {
			break
		}
	}
	return id[:n]
}

// ShortID returns the id of f as the user sees it: the shortest prefix
// that no other session of f's directory shares, so `--resume` with it
// finds f alone. An in-memory session shows the first MinShortID
// characters.
func ShortID(f *File) string {
	var others []string
	if f.path != "" {
		for _, info := range List(filepath.Dir(f.path)) {
			if info.Path != f.path && info.ID != f.header.ID {
				others = append(others, info.ID)
			}
		}
	}
	return UniquePrefix(f.header.ID, others)
}
