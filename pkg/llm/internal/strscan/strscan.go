// Package strscan finds, in a long run of JSON string bytes, the next byte
// a JSON reader (jsonr) or writer (jsonw) must look at, 16 bytes a compare
// (SSE2 assembly on amd64: the port's baseline, so no CPU check). Elsewhere,
// and with the purego build tag, Have is false and the callers' word loops
// do it all.
//
// Both take s in whole 16-byte blocks and never read past them: when no
// block has a hit, the result is where the blocks end (len(s) rounded down
// to 16) and the rest is the caller's.
package strscan
