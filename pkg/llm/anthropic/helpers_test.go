package anthropic

import (
	"errors"
	"strings"

	"github.com/ompgo/omp/internal/sse"
)

func asError[T error](err error, target *T) bool { return errors.As(err, target) }

func newReader(s string) *sse.Reader { return sse.NewReader(strings.NewReader(s)) }
