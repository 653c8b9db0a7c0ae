package jsonw

// Comma appends ',' unless dst is empty or ends with '{' or '['.
func Comma(dst []byte) []byte {
	if n := len(dst); n > 0 && dst[n-1] != '{' && dst[n-1] != '[' {
		dst = append(dst, ',')
	}
	return dst
}

// Key appends `"k":`, after a comma unless dst ends an opening brace or
// bracket. k is escaped as String does (the wire keys need none).
func Key(dst []byte, k string) []byte {
	dst = String(Comma(dst), k)
	return append(dst, ':')
}

// PlainField appends `"key":"value"` with value in the plain dialect.
func PlainField(dst []byte, key, value string) []byte { return Plain(Key(dst, key), value) }

// IntField appends `"key":n`.
func IntField(dst []byte, key string, n int64) []byte { return Int(Key(dst, key), n) }

// BoolField appends `"key":true|false`.
func BoolField(dst []byte, key string, v bool) []byte { return Bool(Key(dst, key), v) }

// RawField appends `"key":raw`; raw must be valid JSON.
func RawField(dst []byte, key string, raw []byte) []byte { return append(Key(dst, key), raw...) }
