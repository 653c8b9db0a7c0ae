package interopdiff

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxSafeInteger is Number.MAX_SAFE_INTEGER, the nextSweepInMs of a
// disabled refresher, kept as is by the normaliser.
const maxSafeInteger = 9007199254740991

// idMap gives the credential ids one broker returned in one sequence their
// order of first appearance (#1, #2, …), so two brokers with different id
// counters compare equal, and turns #n in a step's path back into the id.
type idMap struct {
	byID  map[int64]int
	order []int64
}

func newIDMap() *idMap { return &idMap{byID: map[int64]int{}} }

func (m *idMap) see(id int64) string {
	n, ok := m.byID[id]
	if !ok {
		m.order = append(m.order, id)
		n = len(m.order)
		m.byID[id] = n
	}
	return "#" + strconv.Itoa(n)
}

// id returns the broker id of ordinal n (1-based), or a number no broker
// has handed out when the sequence has not seen that many ids.
func (m *idMap) id(n int) int64 {
	if n < 1 || n > len(m.order) {
		return 987654321
	}
	return m.order[n-1]
}

var (
	idInText   = regexp.MustCompile(`(id=|Credential |credential |/v1/credential/)(\d+)\b`)
	idTemplate = regexp.MustCompile(`\{id(\d)\}`)
)

// normaliser rewrites one broker's decoded JSON reply into the form that is
// compared: ids as #n, clocks and generations as placeholders, expiries
// near now as "now±Nm", the broker's own fake token URL as {tokenUrl}.
type normaliser struct {
	ids      *idMap
	now      time.Time
	tokenURL string
}

// value normalises v in place of key (the object key it sits under, "" at
// the top or in arrays).
func (n *normaliser) value(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		// ids first, so a reply's own ids are numbered in document order
		// even when an error text names one later.
		if id, ok := x["id"].(float64); ok && id == math.Trunc(id) {
			out["id"] = n.ids.see(int64(id))
		}
		// Sorted keys: ids named only in texts are numbered the same way
		// on both sides.
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if _, done := out[k]; done {
				continue
			}
			out[k] = n.value(k, x[k])
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = n.value("", e)
		}
		return out
	case float64:
		switch key {
		case "generation":
			return "<generation>"
		case "generatedAt", "serverNowMs", "updatedAtMs", "firstSeen", "lastSeen":
			return "<now>"
		case "nextSweepInMs", "rotatesInMs":
			if x == maxSafeInteger {
				return x
			}
			return "<ms>"
		case "expires", "blockedUntilMs":
			d := time.Duration(x-float64(n.now.UnixMilli())) * time.Millisecond
			if d.Abs() < 7*24*time.Hour {
				return fmt.Sprintf("now%+dm", int(d.Round(time.Minute).Minutes()))
			}
		}
		return x
	case string:
		if key == "version" {
			return "<version>"
		}
		return n.text(x)
	}
	return v
}

func (n *normaliser) text(s string) string {
	if n.tokenURL != "" {
		s = strings.ReplaceAll(s, n.tokenURL, "{tokenUrl}")
	}
	return idInText.ReplaceAllStringFunc(s, func(m string) string {
		p := idInText.FindStringSubmatch(m)
		id, err := strconv.ParseInt(p[2], 10, 64)
		if err != nil {
			return m
		}
		return p[1] + n.ids.see(id)
	})
}

// Difference is one place where the two normalised replies differ: a path
// ("status", "body.credentials[0].credential.orgId", …) and each side's
// value as compact JSON, or "<absent>".
type Difference struct {
	Path string
	Ref  string
	Ours string
}

const absent = "<absent>"

func (d Difference) String() string { return fmt.Sprintf("%s: ref %s, ours %s", d.Path, d.Ref, d.Ours) }

// Compare lists the differences between two normalised values.
func Compare(path string, ref, ours any) []Difference {
	var out []Difference
	compare(path, ref, ours, true, true, &out)
	return out
}

func compare(path string, ref, ours any, haveRef, haveOurs bool, out *[]Difference) {
	if !haveRef || !haveOurs {
		*out = append(*out, Difference{Path: path, Ref: show(ref, haveRef), Ours: show(ours, haveOurs)})
		return
	}
	rm, rok := ref.(map[string]any)
	om, ook := ours.(map[string]any)
	if rok && ook {
		keys := make([]string, 0, len(rm)+len(om))
		for k := range rm {
			keys = append(keys, k)
		}
		for k := range om {
			if _, ok := rm[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			r, hr := rm[k]
			o, ho := om[k]
			compare(join(path, k), r, o, hr, ho, out)
		}
		return
	}
	ra, rok := ref.([]any)
	oa, ook := ours.([]any)
	if rok && ook {
		for i := 0; i < max(len(ra), len(oa)); i++ {
			var r, o any
			if i < len(ra) {
				r = ra[i]
			}
			if i < len(oa) {
				o = oa[i]
			}
			compare(fmt.Sprintf("%s[%d]", path, i), r, o, i < len(ra), i < len(oa), out)
		}
		return
	}
	if rs, os := show(ref, true), show(ours, true); rs != os {
		*out = append(*out, Difference{Path: path, Ref: rs, Ours: os})
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func show(v any, have bool) string {
	if !have {
		return absent
	}
	return compact(v)
}

// compact is v as one line of JSON, without HTML escaping (so "<ms>"
// stays readable).
func compact(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
