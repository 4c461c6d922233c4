package decode

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"strconv"
)

// errTooLarge is wrapped by the refusal of an engine whose buffers do not
// fit in memory or whose size does not fit in 64 bits.
var errTooLarge = errors.New("does not fit in memory")

// sizeProduct multiplies the factors of a buffer size, refusing a negative
// factor or a product past math.MaxInt64 instead of wrapping around.
func sizeProduct(what string, factors ...int) (int64, error) {
	p := uint64(1)
	for _, f := range factors {
		if f < 0 {
			return 0, fmt.Errorf("%s: negative factor %d in %v", what, f, factors)
		}
		hi, lo := bits.Mul64(p, uint64(f))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("%s: %v bytes overflows 64 bits: %w", what, factors, errTooLarge)
		}
		p = lo
	}
	return int64(p), nil
}

// sizeSum adds buffer sizes, refusing a sum past math.MaxInt64.
func sizeSum(what string, sizes ...int64) (int64, error) {
	var s int64
	for _, n := range sizes {
		if n < 0 || s > math.MaxInt64-n {
			return 0, fmt.Errorf("%s: sum of %v bytes overflows 64 bits: %w", what, sizes, errTooLarge)
		}
		s += n
	}
	return s, nil
}

// checkFits refuses need bytes when more than avail are asked for. avail
// < 0 means unknown: then only the sizes' arithmetic has been checked.
func checkFits(what string, need, avail int64) error {
	if avail >= 0 && need > avail {
		return fmt.Errorf("%s needs %d bytes (%.2f GiB), %d (%.2f GiB) are available: %w",
			what, need, float64(need)/(1<<30), avail, float64(avail)/(1<<30), errTooLarge)
	}
	return nil
}

// availableMemory is the memory the system can give this process without
// swapping: MemAvailable of /proc/meminfo, else the free and buffer memory
// sysinfo reports, else -1 (unknown).
func availableMemory() int64 {
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		if n, ok := parseMemAvailable(data); ok {
			return n
		}
	}
	return sysinfoAvailable()
}

// parseMemAvailable reads the MemAvailable line (in kB) of /proc/meminfo.
func parseMemAvailable(data []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 || string(f[0]) != "MemAvailable:" {
			continue
		}
		kb, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil || kb < 0 || kb > math.MaxInt64/1024 {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}
