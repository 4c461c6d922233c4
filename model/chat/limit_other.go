//go:build !linux

package chat

// limitAddressSpace does nothing where there is no RLIMIT_AS to rely on:
// memory is then bounded only softly, by the collector's memory limit,
// and by the render time.
func limitAddressSpace(extra int64) error { return nil }
