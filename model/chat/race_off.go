//go:build !race

package chat

// raceBuild is set in race-detector builds, whose shadow memory cannot
// live under an address-space cap.
const raceBuild = false
