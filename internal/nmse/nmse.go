// Package nmse measures how far computed values are from a reference by the
// normalized squared error the tests and golden checks use.
package nmse

// Of is Σ(got−ref)² / Σref² over len(ref) values, summed in float64.
func Of(got, ref []float32) float64 {
	var num, den float64
	for i := range ref {
		d := float64(got[i]) - float64(ref[i])
		num += d * d
		den += float64(ref[i]) * float64(ref[i])
	}
	return num / den
}
