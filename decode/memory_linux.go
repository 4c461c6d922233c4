package decode

import (
	"math"
	"syscall"
)

// sysinfoAvailable is free plus buffer memory from sysinfo(2), or -1.
func sysinfoAvailable() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return -1
	}
	unit := uint64(si.Unit)
	if unit == 0 {
		unit = 1
	}
	free := (uint64(si.Freeram) + uint64(si.Bufferram)) * unit
	if free > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(free)
}
