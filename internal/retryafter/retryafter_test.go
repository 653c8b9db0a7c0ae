package retryafter

import (
	"math"
	"net/http"
	"testing"
	"time"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestParse(t *testing.T) {
	at := now.Add(30 * time.Second)
	tests := []struct {
		name   string
		ra, ms string
		want   time.Duration
	}{
		{"empty", "", "", 0},
		{"milliseconds win", "10", "1500", 1500 * time.Millisecond},
		{"decimal milliseconds", "", "1.5", 1500 * time.Microsecond},
		{"zero milliseconds fall back", "7", "0", 7 * time.Second},
		{"garbage milliseconds fall back", "7", "soon", 7 * time.Second},
		{"seconds", "7", "", 7 * time.Second},
		{"zero seconds", "0", "", 0},
		{"seconds with spaces", " 7 ", "", 7 * time.Second},
		{"decimal seconds", "3.5", "", 3500 * time.Millisecond},
		{"leading dot", ".5", "", 500 * time.Millisecond},
		{"exponent", "1e2", "", 100 * time.Second},
		{"huge exponent saturates", "1e300", "", Max},
		{"out of float range saturates", "1e999", "", Max},
		{"huge integer saturates", "99999999999999999999999", "", Max},
		{"just over the cap", "86401", "", Max},
		{"at the cap", "86400", "", Max},
		{"huge milliseconds saturate", "", "1e300", Max},
		{"tiny is zero", "1e-400", "", 0},
		{"negative is unusable", "-5", "", 0},
		{"plus sign is unusable", "+5", "", 0},
		{"hex is unusable", "0x10", "", 0},
		{"inf is unusable", "Inf", "", 0},
		{"nan is unusable", "NaN", "", 0},
		{"garbage", "soon", "", 0},
		{"RFC 1123 date", at.Format(http.TimeFormat), "", 30 * time.Second},
		{"RFC 1123 with UTC zone", at.Format(time.RFC1123), "", 30 * time.Second},
		{"RFC 1123 with numeric zone", at.Format(time.RFC1123Z), "", 30 * time.Second},
		{"RFC 850 date", at.Format(time.RFC850), "", 30 * time.Second},
		{"ANSI C date", at.Format(time.ANSIC), "", 30 * time.Second},
		{"past date", now.Add(-time.Hour).Format(http.TimeFormat), "", 0},
		{"now", now.Format(http.TimeFormat), "", 0},
		{"far future date saturates", now.AddDate(100, 0, 0).Format(http.TimeFormat), "", Max},
		{"year 9999 saturates", "Fri, 31 Dec 9999 23:59:59 GMT", "", Max},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Parse(tt.ra, tt.ms, now); got != tt.want {
				t.Fatalf("Parse(%q, %q) = %v, want %v", tt.ra, tt.ms, got, tt.want)
			}
		})
	}
}

func TestHeader(t *testing.T) {
	if got := Header("120", now); got != 2*time.Minute {
		t.Fatal(got)
	}
}

func TestSecondsAndClamp(t *testing.T) {
	for in, want := range map[float64]time.Duration{0: 0, -1: 0, 1.5: 1500 * time.Millisecond, 1e300: Max, 86400: Max} {
		if got := Seconds(in); got != want {
			t.Errorf("Seconds(%v) = %v, want %v", in, got, want)
		}
	}
	if Seconds(math.NaN()) != 0 || Seconds(math.Inf(1)) != Max || Clamp(-time.Second) != 0 || Clamp(time.Duration(math.MaxInt64)) != Max || Clamp(time.Second) != time.Second {
		t.Fatal("Seconds(NaN/Inf) or Clamp")
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"", "7", "1.5", "1e300", "-1", "NaN", "Inf", "0x1p3", "Wed, 01 Jan 2026 00:00:30 GMT",
		"Wednesday, 01-Jan-26 00:00:30 GMT", "Wed Jan  1 00:00:30 2026", "99999999999999999999"} {
		f.Add(s, "", int64(0))
		f.Add("", s, int64(0))
	}
	f.Fuzz(func(t *testing.T, ra, ms string, offset int64) {
		n := now.Add(time.Duration(offset))
		d := Parse(ra, ms, n)
		if d < 0 || d > Max {
			t.Fatalf("Parse(%q, %q) = %v, outside [0, %v]", ra, ms, d, Max)
		}
		if h := Header(ra, n); h < 0 || h > Max {
			t.Fatalf("Header(%q) = %v", ra, h)
		}
	})
}
