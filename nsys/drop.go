package nsys

import (
	"fmt"
	"math"
	"strings"
)

// A dropCounter counts the rows of one table that the reader drops, by reason. Every
// timestamp of every table goes through keep (NVTX rows through keepRange), so that a bad
// row is dropped, and counted in the table's one warning, instead of read as time 0 or as
// a kernel of centuries.
type dropCounter struct {
	zero, reversed, badDevice int
	badType                   int // start or end not an INTEGER: NULL, text, blob or real (1e300, inf)
	outside                   int // a timestamp beyond ±MaxTime
	unclosed                  int // NVTX: no end, though a later range of the same name follows on the thread
}

// MaxTime bounds the timestamps the reader accepts: 2^62 ns, 146 years either side of the
// session start. Larger values are no time a capture can hold (an end of 1e300 or inf
// would otherwise make a kernel of 292 years, and durations would wrap).
const MaxTime Time = 1 << 62

// keep checks a row's start and end; bad is the row's mask of non-INTEGER columns, whose
// bits colStart and colEnd are start and end.
func (d *dropCounter) keep(start, end, bad int64) bool {
	switch {
	case bad&(1<<colStart|1<<colEnd) != 0:
		d.badType++
		return false
	case start == 0 || end == 0:
		// nsys counts from the session start: a zero is a missing value, not an instant.
		d.zero++
		return false
	case start < -int64(MaxTime) || start > int64(MaxTime) || end < -int64(MaxTime) || end > int64(MaxTime):
		d.outside++
		return false
	case end < start:
		d.reversed++
		return false
	}
	return true
}

// keepDevice drops rows whose device id does not fit DeviceID (no CUDA device has one),
// or is no integer (bit colDevice of bad).
func (d *dropCounter) keepDevice(dev, bad int64) bool {
	if dev < 0 || dev > math.MaxInt16 || bad&(1<<colDevice) != 0 {
		d.badDevice++
		return false
	}
	return true
}

func (d *dropCounter) add(o dropCounter) {
	d.zero += o.zero
	d.reversed += o.reversed
	d.badDevice += o.badDevice
	d.badType += o.badType
	d.outside += o.outside
	d.unclosed += o.unclosed
}

func (d *dropCounter) total() int {
	return d.zero + d.reversed + d.badDevice + d.badType + d.outside + d.unclosed
}

// warn gives the table's one warning: how many rows were dropped, of which table, and why.
func (d *dropCounter) warn(r *reader, what, table string, kept int) {
	dropped := d.total()
	if dropped == 0 {
		return
	}
	total := kept + dropped
	var why []string
	for _, c := range []struct {
		n    int
		text string
	}{
		{d.badType, "with a missing or non-integer timestamp"},
		{d.zero, "with zero timestamps"},
		{d.outside, "with a timestamp beyond ±2^62 ns"},
		{d.badDevice, "with a device id out of range"},
		{d.reversed, "ending before they start"},
		{d.unclosed, "never closed though a later range of the same name follows on the thread"},
	} {
		if c.n > 0 {
			why = append(why, fmt.Sprintf("%d %s", c.n, c.text))
		}
	}
	r.warnf("dropped %d of %d %s rows of %s (%.3g%%): %s", dropped, total, what, table,
		100*float64(dropped)/float64(total), strings.Join(why, ", "))
}

// keepRange holds an NVTX row to the rules of kernel rows (dropCounter.keep): its start
// and end must be integers within ±MaxTime, the end not before the start, not both zero
// (a range may start at 0, the session start).
// A NULL end is a range never closed: kept, with End < Start (Range.Open), and checked once
// all rows are read (dropUnclosed).
func (d *dropCounter) keepRange(s int64, sk valueKind, e int64, ek valueKind) (Time, Time, bool) {
	if sk != valueInt {
		d.badType++
		return 0, 0, false
	}
	if ek == valueNull {
		if s != 0 && !d.keep(s, s, 0) { // the start alone
			return 0, 0, false
		}
		end := Time(-1)
		if s < 0 {
			end = Time(s) - 1
		}
		return Time(s), end, true
	}
	if ek != valueInt {
		d.badType++
		return 0, 0, false
	}
	if s == 0 && e != 0 {
		// A range may start at the session start (hand-made exports do); only both
		// timestamps zero is the missing-value pattern for NVTX rows.
		if !d.keep(1, e, 0) {
			return 0, 0, false
		}
		return Time(s), Time(e), true
	}
	if !d.keep(s, e, 0) {
		return 0, 0, false
	}
	return Time(s), Time(e), true
}

// A valueKind is the SQLite type of an NVTX timestamp as keepRange tells them apart.
type valueKind uint8

const (
	valueInt   valueKind = iota // INTEGER
	valueNull                   // NULL
	valueOther                  // REAL, TEXT or BLOB
)
