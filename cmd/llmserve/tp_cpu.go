//go:build !cuda

package main

// checkGPUs fails in a build without the cuda tag.
func checkGPUs(int) error { return errNoGPU }
