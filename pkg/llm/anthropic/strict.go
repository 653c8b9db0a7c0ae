package anthropic

import (
	"errors"
	"regexp"
	"sync"

	"github.com/ompgo/omp/pkg/llm"
)

// strictPatterns are the texts of an upstream 400 that rejects strict tool
// schemas (the endpoint or the model does not take the strict flag, or
// cannot compile the grammar it implies).
var strictPatterns = sync.OnceValue(func() map[string]*regexp.Regexp {
	return map[string]*regexp.Regexp{
		"field":       regexp.MustCompile(`(?i)\btools\.\d+\.custom\.strict\b`),
		"extra":       regexp.MustCompile(`(?i)extra inputs? (?:are|is) not permitted`),
		"structured":  regexp.MustCompile(`(?i)structured[_ -]?outputs?`),
		"unsupported": regexp.MustCompile(`(?i)not (?:supported|available|enabled)|unsupported|does(?: not|n'?t) support`),
		"schema":      regexp.MustCompile(`(?i)invalid schema for function|invalid tool parameters schema`),
		"invalid":     regexp.MustCompile(`(?i)invalid_request_error`),
		"grammar":     regexp.MustCompile(`(?i)compiled grammar`),
		"large":       regexp.MustCompile(`(?i)too large`),
		"schemaWord":  regexp.MustCompile(`(?i)schema`),
		"complex":     regexp.MustCompile(`(?i)too complex`),
		"compile":     regexp.MustCompile(`(?i)compil`),
	}
})

// strictRejected reports whether err is the upstream's 400 refusing strict
// tools: the strict field is not permitted, structured outputs are not
// supported, the function schema is invalid, or the grammar it compiles to
// is too large or too complex.
func strictRejected(err error) bool {
	var ue *llm.UpstreamError
	if !errors.As(err, &ue) || ue.Status != 400 {
		return false
	}
	text := ue.Type + ": " + ue.Message
	re := strictPatterns()
	switch {
	case re["field"].MatchString(text) && re["extra"].MatchString(text),
		re["structured"].MatchString(text) && re["unsupported"].MatchString(text),
		re["schema"].MatchString(text):
		return true
	case !re["invalid"].MatchString(text):
		return false
	}
	return re["grammar"].MatchString(text) && re["large"].MatchString(text) ||
		re["schemaWord"].MatchString(text) && re["complex"].MatchString(text) && re["compile"].MatchString(text)
}

// hasStrictTools reports whether req asks for strict schemas on any tool.
func hasStrictTools(req *llm.Request) bool {
	for _, t := range req.Tools {
		if t.Strict != nil && *t.Strict {
			return true
		}
	}
	return false
}

// withoutStrictTools is a shallow copy of req whose tools carry no strict
// flag.
func withoutStrictTools(req *llm.Request) *llm.Request {
	out := *req
	out.Tools = make([]llm.Tool, len(req.Tools))
	copy(out.Tools, req.Tools)
	for i := range out.Tools {
		out.Tools[i].Strict = nil
	}
	return &out
}
