package breakdown

import "testing"

// TestFormatDuration pins the text form of times, including values that round up into
// the next unit (999.96µs is 1.000ms, never "1000.0µs").
func TestFormatDuration(t *testing.T) {
	for _, c := range []struct {
		ns   float64
		want string
	}{
		{0, "0ns"}, {42, "42ns"}, {999.4, "999ns"}, {999.6, "1.000µs"},
		{1000, "1.000µs"}, {9999.6, "10.00µs"}, {812_400, "812.4µs"}, {999_949, "999.9µs"},
		{999_960, "1.000ms"}, {5_120_000, "5.120ms"}, {99_999_600, "100.0ms"},
		{999_960_000, "1.000s"}, {12_345_000_000, "12.35s"}, {-999_960, "-1.000ms"},
		{7_200e9, "7200.0s"},
	} {
		if got := FormatDurationF(c.ns); got != c.want {
			t.Errorf("FormatDurationF(%v) = %q, want %q", c.ns, got, c.want)
		}
	}
}
