package google

import "strconv"

// validSignature reports whether s is standard base64, as Google's bytes
// fields require.
func validSignature(s string) bool {
	if s == "" || len(s)%4 != 0 {
		return false
	}
	pad := 0
	for i := len(s) - 1; i >= 0 && s[i] == '='; i-- {
		pad++
	}
	if pad > 2 || pad == len(s) {
		return false
	}
	for i := 0; i < len(s)-pad; i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

// normalizeID maps a tool-call id to [A-Za-z0-9_-]{1,64}.
func normalizeID(id string) string {
	ok := len(id) <= 64
	for i := 0; ok && i < len(id); i++ {
		ok = isIDByte(id[i])
	}
	if ok {
		return id
	}
	b := []byte(id)
	for i := range b {
		if !isIDByte(b[i]) {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}

func isIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// nameMap rewrites tool names to Google's charset (a letter or underscore,
// then [A-Za-z0-9_-], at most 64) deterministically, both ways.
type nameMap struct {
	toWire map[string]string
	toName map[string]string
}

func newNameMap() *nameMap {
	return &nameMap{toWire: map[string]string{}, toName: map[string]string{}}
}

// reserve records the names that are already valid so that rewritten
// names never collide with them.
func (n *nameMap) reserve(name string) {
	if validName(name) {
		n.toWire[name], n.toName[name] = name, name
	}
}

func (n *nameMap) wire(name string) string {
	if w, ok := n.toWire[name]; ok {
		return w
	}
	if validName(name) {
		n.toWire[name], n.toName[name] = name, name
		return name
	}
	b := []byte(name)
	for i := range b {
		if !isIDByte(b[i]) {
			b[i] = '_'
		}
	}
	if len(b) == 0 || !(b[0] == '_' || b[0] >= 'a' && b[0] <= 'z' || b[0] >= 'A' && b[0] <= 'Z') {
		b = append([]byte{'_'}, b...)
	}
	if len(b) > 64 {
		b = b[:64]
	}
	w := string(b)
	for i := 2; n.taken(w); i++ {
		suffix := "_" + strconv.Itoa(i)
		base := string(b)
		if len(base)+len(suffix) > 64 {
			base = base[:64-len(suffix)]
		}
		w = base + suffix
	}
	n.toWire[name], n.toName[w] = w, name
	return w
}

func (n *nameMap) canonical(wire string) string {
	if name, ok := n.toName[wire]; ok {
		return name
	}
	return wire
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	c := s[0]
	if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIDByte(s[i]) {
			return false
		}
	}
	return true
}

func (n *nameMap) taken(w string) bool { _, ok := n.toName[w]; return ok }
