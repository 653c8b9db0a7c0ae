package config

// Typed getters for the agent's dotted settings, read in
// the nested and the flat form like every other key. A key that is absent
// or of another type reports ok = false, and the caller keeps its default.

// Bool returns a boolean setting.
func (s *Settings) Bool(dotted string) (v, ok bool) {
	if s == nil || s.root == nil {
		return false, false
	}
	v, ok = lookup(s.root, dotted, func(x any) bool { _, ok := x.(bool); return ok }).(bool)
	return v, ok
}

// Number returns a numeric setting (a number or a numeric string).
func (s *Settings) Number(dotted string) (float64, bool) {
	if s == nil || s.root == nil {
		return 0, false
	}
	return number(lookup(s.root, dotted, isNumber))
}

// String returns a string setting.
func (s *Settings) String(dotted string) (string, bool) {
	if s == nil || s.root == nil {
		return "", false
	}
	v, ok := lookup(s.root, dotted, isString).(string)
	return v, ok
}

// List reports whether a setting is a list and returns its length.
func (s *Settings) List(dotted string) (n int, ok bool) {
	if s == nil || s.root == nil {
		return 0, false
	}
	v, ok := lookup(s.root, dotted, func(x any) bool { _, ok := x.([]any); return ok }).([]any)
	return len(v), ok
}
