package decode

// ShardBest is one rank's greedy candidate: the largest logit of its
// vocabulary span and that token's global id. OK is false when no logit
// of the span is above -Inf.
type ShardBest struct {
	ID    int32
	Logit float32
	OK    bool
}

// BestOfShard is the greedy candidate of one rank's logits, whose first
// entry is token lo: the lowest id on ties, NaN counting as -Inf, as
// argmaxLogits picks over a whole row.
func BestOfShard(logits []float32, lo int) ShardBest {
	best, ok := argmaxFinite(logits)
	c := ShardBest{ID: int32(lo) + best, OK: ok}
	if ok {
		c.Logit = logits[best]
	}
	return c
}

// MergeBest is the global greedy pick from the ranks' candidates, given in
// rank order (ascending vocabulary spans): the largest logit, the lowest
// id on ties, token 0 when no rank has a logit above -Inf — the token
// argmaxLogits picks from the gathered row.
func MergeBest(parts []ShardBest) int32 {
	var best ShardBest
	for _, p := range parts {
		if p.OK && (!best.OK || p.Logit > best.Logit) {
			best = p
		}
	}
	if !best.OK {
		return 0
	}
	return best.ID
}
