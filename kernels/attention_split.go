package kernels

// attentionMinPer is the fewest positions a split of attention_part
// takes (att_used in attention_part.cuh): a token that sees n positions
// uses ceil(n/attentionMinPer) of the launch's splits, at most all of
// them, and the blocks of the others return at once.
const attentionMinPer = 32
