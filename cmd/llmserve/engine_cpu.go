//go:build !cuda

package main

import (
	"llmserve/decode"
	"llmserve/model"
)

// openGPUEngine always fails in a build without the cuda tag.
func openGPUEngine(*model.Model, engineConfig, func(string)) (decode.Engine, error) {
	return nil, errNoGPU
}
