package jsonw

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// Int appends n.
func Int(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// Float appends f in the shortest form that round-trips, integers
// below 1e15 without exponent (the Anthropic codec's form).
func Float(dst []byte, f float64) []byte {
	if f == float64(int64(f)) && f < 1e15 && f > -1e15 {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// Number appends f as encoding/json writes a float64 (and as
// JSON.stringify does). NaN and ±Inf, which JSON cannot carry, become 0.
func Number(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, '0')
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' { // clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// Bool appends true or false.
func Bool(dst []byte, v bool) []byte { return strconv.AppendBool(dst, v) }

// Raw appends raw JSON, or null when it is empty.
func Raw(dst []byte, raw []byte) []byte {
	if len(raw) == 0 {
		return append(dst, "null"...)
	}
	return append(dst, raw...)
}

// Compact appends raw JSON without insignificant whitespace, or fallback
// when raw is empty or not valid JSON.
func Compact(dst []byte, raw []byte, fallback string) []byte {
	if len(raw) == 0 || !json.Valid(raw) {
		return append(dst, fallback...)
	}
	if isCompact(raw) {
		return append(dst, raw...)
	}
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, raw); err != nil {
		return append(dst, fallback...)
	}
	return buf.Bytes()
}

// CompactString is Compact for JSON text held in a string.
func CompactString(dst []byte, s, fallback string) []byte {
	return Compact(dst, []byte(s), fallback)
}

// isCompact reports whether raw has no whitespace outside strings (the
// usual case: compaction can then be skipped).
func isCompact(raw []byte) bool {
	in := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if in {
			switch c {
			case '\\':
				i++
			case '"':
				in = false
			}
			continue
		}
		switch c {
		case '"':
			in = true
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return true
}
