package jsonr

import (
	"math"
	"strconv"
)

// number scans a number and returns its text.
func (r *Reader) number() []byte {
	start := r.pos
	i := r.pos
	d := r.data
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		i = digits(d, i)
	default:
		r.pos = i
		r.syntax("invalid number")
		return nil
	}
	if i < len(d) && d[i] == '.' {
		i++
		if j := digits(d, i); j > i {
			i = j
		} else {
			r.pos = i
			r.syntax("invalid number")
			return nil
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if j := digits(d, i); j > i {
			i = j
		} else {
			r.pos = i
			r.syntax("invalid number")
			return nil
		}
	}
	r.pos = i
	return d[start:i]
}

// digits returns the offset after the run of digits at d[i:].
func digits(d []byte, i int) int {
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		i++
	}
	return i
}

// Number reads a number and returns its text (aliasing the input); null
// reads as nil.
func (r *Reader) Number() []byte {
	c := r.Peek()
	if c == 'n' {
		r.Null()
		return nil
	}
	if c != '-' && (c < '0' || c > '9') {
		if r.err == nil {
			r.typeErr("number")
		}
		return nil
	}
	n := r.number()
	if r.err != nil {
		return nil
	}
	return n
}

// Float reads a number (null reads as 0).
func (r *Reader) Float() float64 {
	n := r.Number()
	if n == nil {
		return 0
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		r.Fail(&TypeError{Offset: r.pos, Want: "number", Got: "out-of-range number"})
		return 0
	}
	return f
}

// Int reads an integer (null reads as 0). An integral number written with
// a fraction or exponent (100.0, 1e3) is accepted up to 2^53; any other
// fraction or an overflow is a TypeError.
func (r *Reader) Int() int64 {
	n := r.Number()
	if n == nil {
		return 0
	}
	if v, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return v
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || f > 1<<53 || f < -(1<<53) {
		r.Fail(&TypeError{Offset: r.pos, Want: "integer", Got: "number"})
		return 0
	}
	return int64(f)
}

// IntExact reads an integer the way encoding/json reads one into an int64:
// digits only, no fraction or exponent (null reads as 0). Anything else is
// a TypeError.
func (r *Reader) IntExact() int64 {
	n := r.Number()
	if n == nil {
		return 0
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		r.Fail(&TypeError{Offset: r.pos, Want: "integer", Got: "number " + string(n)})
		return 0
	}
	return v
}
