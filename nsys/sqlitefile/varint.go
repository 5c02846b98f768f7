package sqlitefile

import "math"

// Varint decodes an SQLite varint (big-endian, 7 bits a byte, the ninth byte whole) from
// b; n is 0 when b ends first.
func Varint(b []byte) (v int64, n int) {
	var u uint64
	for i := 0; i < 8; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		u = u<<7 | uint64(c&0x7f)
		if c < 0x80 {
			return int64(u), i + 1
		}
	}
	if len(b) < 9 {
		return 0, 0
	}
	return int64(u<<8 | uint64(b[8])), 9
}

// serialLen is the body length of a value of serial type t.
func serialLen(t uint64) int64 {
	switch {
	case t <= 4:
		return [...]int64{0, 1, 2, 3, 4}[t]
	case t == 5:
		return 6
	case t == 6 || t == 7:
		return 8
	case t < 12:
		return 0
	case t > math.MaxInt64/2:
		return math.MaxInt64 / 4 // no payload holds it: caught by the size check
	}
	return int64(t-12) / 2
}

// fastLens are the body lengths of the serial types of one byte.
var fastLens = func() (l [128]uint8) {
	for t := range l {
		l[t] = uint8(serialLen(uint64(t)))
	}
	return l
}()

func serialName(t uint64) string {
	switch {
	case t == 7:
		return "REAL"
	case t == 10 || t == 11:
		return "reserved serial type"
	case t%2 == 0:
		return "BLOB"
	}
	return "TEXT"
}

// intValue decodes the integer of serial type t (1-6, 8, 9) at the start of b, which
// holds its body; ok is false for any other type.
func intValue(t uint64, b []byte) (v int64, ok bool) {
	switch t {
	case 1:
		return int64(int8(b[0])), true
	case 2:
		return int64(int16(uint16(b[0])<<8 | uint16(b[1]))), true
	case 3:
		return int64(int8(b[0]))<<16 | int64(b[1])<<8 | int64(b[2]), true
	case 4:
		return int64(int32(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))), true
	case 5:
		return int64(int16(uint16(b[0])<<8|uint16(b[1])))<<32 | int64(uint32(b[2])<<24|uint32(b[3])<<16|uint32(b[4])<<8|uint32(b[5])), true
	case 6:
		_ = b[7]
		return int64(uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
			uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])), true
	case 8:
		return 0, true
	case 9:
		return 1, true
	}
	return 0, false
}
