package decode

import "sync"

// SlotState is what one request slot is doing.
type SlotState int

const (
	SlotIdle       SlotState = iota // no request holds the slot
	SlotProcessing                  // a request is filling its prompt or generating
)

func (s SlotState) String() string {
	if s == SlotProcessing {
		return "processing"
	}
	return "idle"
}

// SlotInfo is one slot as the scheduler last published it.
type SlotInfo struct {
	ID              int       // the slot's index, 0 to MaxSeqs-1
	State           SlotState // idle or processing
	PromptTokens    int       // tokens of the running request's prompt; 0 when idle
	PromptProcessed int       // prompt tokens in the slot's KV cache so far
	Generated       int       // tokens generated so far by the running request
	MaxTokens       int       // the running request's max_tokens; <= 0: until the context is full
}

// slotView is the copy of the slots that readers see. The Run goroutine
// writes it at the end of every turn of its loop; Slots reads it. Neither
// waits on the other longer than one copy of a few structs.
type slotView struct {
	mu    sync.Mutex // guards infos
	infos []SlotInfo // [MaxSeqs] the slots as of the last publish
}

func newSlotView(n int) *slotView {
	v := &slotView{infos: make([]SlotInfo, n)}
	for i := range v.infos {
		v.infos[i].ID = i
	}
	return v
}

// publishSlots copies the state of every slot into the view. It runs on
// the Run goroutine, which owns slots, and allocates nothing.
func (s *Scheduler) publishSlots() {
	v := s.view
	v.mu.Lock()
	defer v.mu.Unlock()
	for i, seq := range s.slots {
		info := SlotInfo{ID: i}
		if seq != nil && !seq.done {
			info = SlotInfo{
				ID:              i,
				State:           SlotProcessing,
				PromptTokens:    len(seq.req.Prompt),
				PromptProcessed: min(seq.nPast, len(seq.req.Prompt)),
				Generated:       seq.generated,
				MaxTokens:       seq.req.MaxTokens,
			}
		}
		v.infos[i] = info
	}
}

// Slots returns a copy of every slot's state as of the end of the
// scheduler's last step. It is safe to call from any goroutine.
func (s *Scheduler) Slots() []SlotInfo {
	v := s.view
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]SlotInfo(nil), v.infos...)
}

// NumSlots is the number of request slots (requests decoded together).
func (s *Scheduler) NumSlots() int { return len(s.slots) }
