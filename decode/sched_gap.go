package decode

import "time"

// stepCost estimates a forward step's duration from its token count, from
// the steps measured so far, so that the scheduler can size a prompt chunk
// that rides beside running decodes to keep their inter-token gap within
// SchedulerConfig.MaxDecodeGap. It keeps two running averages: the time of
// small steps (decode tokens only, the fixed cost of a step) and the time
// per token of large ones (prompt chunks). Not safe for concurrent use:
// the scheduler's loop owns it.
type stepCost struct {
	base     float64 // seconds of a step of at most stepCostSmall tokens; 0 = none measured
	perToken float64 // seconds per token of a step of more than stepCostSmall tokens; 0 = none measured
}

const (
	stepCostSmall = 64  // steps of at most this many tokens measure the fixed cost
	stepCostAlpha = 0.2 // weight of the newest measurement
	// minGapChunk is the fewest prompt tokens a step beside decodes takes,
	// so that a prompt always progresses.
	minGapChunk = 16
)

// observe records a step of tokens tokens that took d.
func (c *stepCost) observe(tokens int, d time.Duration) {
	if tokens < 1 || d <= 0 {
		return
	}
	sec := d.Seconds()
	avg := func(old, v float64) float64 {
		if old == 0 {
			return v
		}
		return old + stepCostAlpha*(v-old)
	}
	if tokens <= stepCostSmall {
		c.base = avg(c.base, sec)
		return
	}
	c.perToken = avg(c.perToken, sec/float64(tokens))
}

// promptBudget is the most prompt tokens a step with decodes decode
// tokens may add within gap, at most budget (the step's token budget left
// after the decodes): all of budget until a large step has been measured
// or when gap is 0; never fewer than minGapChunk (or budget, if smaller).
func (c *stepCost) promptBudget(gap time.Duration, decodes, budget int) int {
	if gap <= 0 || decodes == 0 || c.perToken == 0 || budget <= minGapChunk {
		return budget
	}
	// The per-token figure of large steps includes their share of the
	// fixed cost, so the estimate errs on the short side.
	room := gap.Seconds() - c.base
	n := int(room/c.perToken) - decodes
	return min(budget, max(n, minGapChunk))
}
