package kernels

import "testing"

// TestWidenPortable runs the widening tests on the portable Go loops too.
func TestWidenPortable(t *testing.T) {
	if !widenAsm {
		t.Skip("the CPU has no widening kernels: the other tests ran the portable loops")
	}
	widenAsm = false
	defer func() { widenAsm = true }()
	t.Run("f16", TestWidenF16)
	t.Run("q8_0", TestWidenQ8_0)
}
