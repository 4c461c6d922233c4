package kernels

// le16 reads a little-endian uint16 at b[0:2].
func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
