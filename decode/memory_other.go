//go:build !linux

package decode

// sysinfoAvailable reports unknown outside Linux.
func sysinfoAvailable() int64 { return -1 }
