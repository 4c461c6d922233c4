// Package cuda is llmserve's thin layer over the CUDA driver API: one
// context and stream per device, device buffers, modules loaded from
// embedded fat binaries, kernel launches and CUDA graphs (stream capture,
// instantiate, replay, kernel-node updates). Every driver call is checked and
// its failure returned as an *Error that names the operation and the
// CUresult.
//
// The code is behind the build tag `cuda`; without it the package is empty
// and nothing in llmserve needs the CUDA toolkit.
package cuda
