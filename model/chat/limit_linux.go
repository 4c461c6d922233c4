package chat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// limitAddressSpace caps this process's address space at what it maps now
// plus extra bytes: an allocation past it fails, and the Go runtime ends
// the process with "out of memory".
func limitAddressSpace(extra int64) error {
	mapped, err := mappedBytes()
	if err != nil {
		return err
	}
	as := uint64(mapped) + uint64(extra)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
		return fmt.Errorf("limit address space: %w", err)
	}
	return nil
}

// mappedBytes returns the size of this process's address space.
func mappedBytes() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, fmt.Errorf("read address space size: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("read address space size: empty /proc/self/statm")
	}
	pages, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read address space size: %w", err)
	}
	return pages * int64(os.Getpagesize()), nil
}
