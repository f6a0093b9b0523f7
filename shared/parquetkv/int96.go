package parquetkv

import (
	"encoding/binary"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
)

// julianUnixEpoch is the Julian day number of 1970-01-01.
const julianUnixEpoch = 2440588

// int96Time converts an INT96 timestamp without a detour through int64
// nanoseconds, so every Julian day gives its instant.
func int96Time(v parquet.Int96) time.Time {
	nanos := binary.LittleEndian.Uint64(v[:8])
	day := int64(binary.LittleEndian.Uint32(v[8:]))
	return time.Unix((day-julianUnixEpoch)*86400, 0).Add(time.Duration(nanos % uint64(24*time.Hour))).
		Add(time.Duration(nanos/uint64(24*time.Hour)) * 24 * time.Hour)
}

func growTo[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
